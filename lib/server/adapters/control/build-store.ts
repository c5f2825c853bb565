import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { type Actor, meshSubject } from '../../core/audit/record.ts';
import { BuildNotFoundError, RetractionContentionError } from '../../core/control/errors.ts';
import type { BuildBody } from '../../core/control/messages.ts';
import type {
  BuildRecording,
  BuildStore,
  BuildTimes,
  RecordedBuild,
  Retraction,
} from '../../core/control/ports.ts';
import { askStore } from '../../core/unavailable.ts';
import { AuditedTableStore } from '../audit/audit-trail.ts';
import { allOld, conditionFailed, type Item, itemAbsent, queryAll, transact } from '../dynamodb/requests.ts';

/**
 * Build results, in the inventory table:
 *
 * | pk                   | sk                          | attributes |
 * |----------------------|-----------------------------|------------|
 * | `build#<id>`         | `build`                     | id, module, version, result, finishedAt, receivedAt, recordedAt: every result, kept once |
 * | `module-builds#<m>`  | `build#<receivedAt>#<id>`   | the same, for each successful build of the module, in the order received |
 * | `module-builds#<m>`  | `retracted#<version>`       | module, version, retractedAt: a version retracted for good |
 * | `builds#latest`      | `<module>`                  | the module's latest successful build that is not retracted, the same attributes |
 *
 * Access: a conditional Put per result with its audit record, in one transaction (a repeat is
 * refused and ignored, and records nothing); then, for a successful one, a PutItem of its entry in the module's builds and one transaction: its
 * version checked not to be retracted, and its module's latest updated when it is newer. Newer
 * is received later (receivedAt, the control plane's own clock when the result came in), or at
 * the same time with a later id: a sender cannot push a build ahead by the times it states. A
 * latest kept before builds carried receivedAt gives way to any build. The writes after the
 * first are made on a repeat too, so a result whose first attempt stopped part-way is completed
 * when it is asked again.
 *
 * A retraction puts its item, then, when the retracted version is the latest, replaces the
 * latest with the newest entry of the module's builds whose version is not retracted (or
 * deletes it when there is none), only if the latest is still what was read. Catch-up reads
 * `builds#latest`, retractions read the module's builds, each with strongly consistent Queries:
 * an index could hand back a build from before a moment ago, and catch-up would announce it.
 */
const latestPartition = 'builds#latest';
const buildItemKey = (id: string) => ({ pk: `build#${id}`, sk: 'build' });
const moduleBuildsPartition = (module: string) => `module-builds#${module}`;
const historyPrefix = 'build#';
const retractedPrefix = 'retracted#';
const historyKey = (build: RecordedBuild) => ({
  pk: moduleBuildsPartition(build.module),
  sk: `${historyPrefix}${build.receivedAt}#${build.id}`,
});
const retractionKey = (module: string, version: string) => ({
  pk: moduleBuildsPartition(module),
  sk: `${retractedPrefix}${version}`,
});

const buildNotKept = itemAbsent;
const notRetracted = itemAbsent;
const noLatestYet = itemAbsent;
const latestFromBeforeReceivedOrder = 'attribute_not_exists(receivedAt)';
const receivedEarlier = 'receivedAt < :receivedAt';
const sameTimeLowerId = '(receivedAt = :receivedAt AND id < :id)';
const newerWins = [noLatestYet, latestFromBeforeReceivedOrder, receivedEarlier, sameTimeLowerId].join(' OR ');
const latestUnchanged = 'id = :seen';

export class DynamoDBBuildStore extends AuditedTableStore implements BuildStore {
  async recordBuild(build: BuildBody, times: BuildTimes, by: Actor): Promise<BuildRecording> {
    let kept: RecordedBuild = { ...build, finishedAt: new Date(build.finishedAt).toISOString(), ...times };
    // The first result for a build id is the one kept, with its record; asking again is not a
    // conflict, and records nothing again.
    const failed = await this.audit.transact(
      'recording a build',
      [
        {
          Put: {
            TableName: this.tableName,
            Item: { ...buildItemKey(build.id), ...kept },
            ConditionExpression: buildNotKept,
          },
        },
      ],
      {
        by,
        action: 'build.record',
        subject: meshSubject,
        target: `module:${build.module}@${build.version}`,
        details: { build: build.id, result: build.result },
      },
    );
    const repeat = failed?.[0] !== undefined;
    const old = failed?.[0]?.old;
    // A result kept before builds carried receivedAt is ordered by this attempt's.
    if (old) kept = { ...buildOf(old), receivedAt: String(old.receivedAt ?? kept.receivedAt) };
    if (kept.result === 'succeeded' && !(await this.#keepIfLatest(kept))) return 'retracted';
    return repeat ? 'repeat' : 'recorded';
  }

  async latestSuccessfulBuilds(): Promise<readonly RecordedBuild[]> {
    const items = await queryAll(this.client, 'reading builds', {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :latest',
      ExpressionAttributeValues: { ':latest': latestPartition },
      ConsistentRead: true,
    });
    return items.map(buildOf);
  }

  async retractBuild(module: string, version: string, retractedAt: string, by: Actor): Promise<Retraction> {
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const { history, retracted } = await this.#moduleBuilds(module);
      const latest = await this.#latest(module);
      const builds = history.filter((build) => build.version === version).map((build) => build.id);
      if (builds.length === 0 && latest?.version !== version) throw new BuildNotFoundError(module, version);
      const since = await this.#retract(module, version, retractedAt, by);
      const answer = {
        module,
        version,
        retractedAt: since ?? retractedAt,
        already: since !== undefined,
        builds,
      };
      if (latest?.version !== version) return { ...answer, latest };
      const previous = history.find((build) => build.version !== version && !retracted.has(build.version));
      if (await this.#replaceLatest(module, latest.id, previous))
        return { ...answer, latest: previous ?? null };
    }
    throw new RetractionContentionError(module, version);
  }

  /** Makes a successful build its module's latest if it is newer; false when its version is retracted. */
  async #keepIfLatest(build: RecordedBuild): Promise<boolean> {
    const kept = { ...build, result: 'succeeded' as const };
    await askStore('recording a build', () =>
      this.client.send(new PutCommand({ TableName: this.tableName, Item: { ...historyKey(kept), ...kept } })),
    );
    const failed = await transact(this.client, 'recording a build', [
      {
        ConditionCheck: {
          TableName: this.tableName,
          Key: retractionKey(build.module, build.version),
          ConditionExpression: notRetracted,
        },
      },
      {
        Update: {
          TableName: this.tableName,
          Key: { pk: latestPartition, sk: build.module },
          UpdateExpression:
            'SET id = :id, #module = :module, version = :version, #result = :result, finishedAt = :finishedAt, receivedAt = :receivedAt, recordedAt = :recordedAt',
          ConditionExpression: newerWins,
          ExpressionAttributeNames: { '#module': 'module', '#result': 'result' },
          ExpressionAttributeValues: {
            ':id': kept.id,
            ':module': kept.module,
            ':version': kept.version,
            ':result': kept.result,
            ':finishedAt': kept.finishedAt,
            ':receivedAt': kept.receivedAt,
            ':recordedAt': kept.recordedAt,
          },
        },
      },
    ]);
    // A later build of the module already being the latest is no news: this one is kept, not announced.
    return !failed?.[0];
  }

  /** Newest first: the module's successful builds, and the versions retracted. */
  async #moduleBuilds(module: string) {
    const items = await queryAll(this.client, 'reading builds', {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': moduleBuildsPartition(module) },
      ScanIndexForward: false,
      ConsistentRead: true,
    });
    const history = items.filter((item) => String(item.sk).startsWith(historyPrefix)).map(buildOf);
    const retracted = new Set(
      items.filter((item) => String(item.sk).startsWith(retractedPrefix)).map((item) => String(item.version)),
    );
    return { history, retracted };
  }

  async #latest(module: string): Promise<RecordedBuild | null> {
    const { Item } = await askStore('reading builds', () =>
      this.client.send(
        new GetCommand({
          TableName: this.tableName,
          Key: { pk: latestPartition, sk: module },
          ConsistentRead: true,
        }),
      ),
    );
    return Item ? buildOf(Item) : null;
  }

  /** Puts the retraction; answers when it was first made if it was there already. */
  /** The retraction's item and its audit record; when it was retracted before, when, and nothing written. */
  async #retract(
    module: string,
    version: string,
    retractedAt: string,
    by: Actor,
  ): Promise<string | undefined> {
    const failed = await this.audit.transact(
      'retracting a build',
      [
        {
          Put: {
            TableName: this.tableName,
            Item: { ...retractionKey(module, version), module, version, retractedAt },
            ConditionExpression: itemAbsent,
          },
        },
      ],
      { by, action: 'build.retract', subject: meshSubject, target: `module:${module}@${version}` },
    );
    return failed?.[0] ? String(failed[0].old?.retractedAt ?? retractedAt) : undefined;
  }

  /** The latest becomes `next` (or goes) if it is still the build `seen`; false when it moved on. */
  async #replaceLatest(module: string, seen: string, next: RecordedBuild | undefined): Promise<boolean> {
    const key = { pk: latestPartition, sk: module };
    const condition = {
      TableName: this.tableName,
      ConditionExpression: latestUnchanged,
      ExpressionAttributeValues: { ':seen': seen },
      ...allOld,
    };
    try {
      await askStore('retracting a build', () =>
        next
          ? this.client.send(new PutCommand({ ...condition, Item: { ...key, ...next } }))
          : this.client.send(new DeleteCommand({ ...condition, Key: key })),
      );
      return true;
    } catch (error) {
      if (!conditionFailed(error)) throw error;
      return false;
    }
  }
}

function buildOf(item: Item): RecordedBuild {
  const build = item as RecordedBuild;
  return {
    id: build.id,
    module: build.module,
    version: build.version,
    result: build.result,
    finishedAt: build.finishedAt,
    receivedAt: build.receivedAt,
    recordedAt: build.recordedAt,
  };
}
