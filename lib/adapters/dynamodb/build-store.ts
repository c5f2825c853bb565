import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { BuildBody } from '../../core/control/messages.ts';
import type { BuildStore, RecordedBuild } from '../../core/control/ports.ts';
import { askStore } from '../../core/unavailable.ts';
import { allOld, conditionFailed, itemAbsent, queryAll, TableStore } from './requests.ts';

/**
 * Build results, in the inventory table:
 *
 * | pk               | sk         | attributes |
 * |------------------|------------|------------|
 * | `build#<id>`     | `build`    | id, module, version, result, finishedAt, recordedAt: every result, kept once |
 * | `builds#latest`  | `<module>` | the module's latest successful build, the same attributes |
 *
 * Access: a conditional PutItem per result (a repeat is refused and ignored); then, for a
 * successful one, a conditional UpdateItem of its module's latest ("newer wins": a later
 * finishedAt, or the same and a later id). The second write is made on a repeat too, so a
 * result whose first attempt stopped between the two is completed when it is asked again.
 * Catch-up reads `builds#latest` with one strongly consistent Query: a build recorded a moment
 * before is seen, where an index could hand back the one before it and catch-up would announce
 * an older version.
 */
const latestPartition = 'builds#latest';
const buildItemKey = (id: string) => ({ pk: `build#${id}`, sk: 'build' });

const buildNotKept = itemAbsent;
const noLatestYet = itemAbsent;
const finishedLater = 'finishedAt < :finishedAt';
const sameTimeLaterId = '(finishedAt = :finishedAt AND id < :id)';
const newerWins = `${noLatestYet} OR ${finishedLater} OR ${sameTimeLaterId}`;

export class DynamoDBBuildStore extends TableStore implements BuildStore {
  async recordBuild(build: BuildBody, recordedAt: string): Promise<'recorded' | 'repeat'> {
    let kept: RecordedBuild = { ...build, finishedAt: new Date(build.finishedAt).toISOString(), recordedAt };
    let result: 'recorded' | 'repeat' = 'recorded';
    try {
      await askStore('recording a build', () =>
        this.client.send(
          new PutCommand({
            TableName: this.tableName,
            Item: { ...buildItemKey(build.id), ...kept },
            ConditionExpression: buildNotKept,
            ...allOld,
          }),
        ),
      );
    } catch (error) {
      // The first result for a build id is the one kept; asking again is not a conflict.
      const failed = conditionFailed(error);
      if (!failed) throw error;
      result = 'repeat';
      kept = (failed.old as RecordedBuild | undefined) ?? kept;
    }
    if (kept.result === 'succeeded') await this.#keepIfLatest(kept);
    return result;
  }

  async latestSuccessfulBuilds(): Promise<readonly RecordedBuild[]> {
    const items = await queryAll(this.client, 'reading builds', {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :latest',
      ExpressionAttributeValues: { ':latest': latestPartition },
      ConsistentRead: true,
    });
    return items.map((item) => {
      const build = item as RecordedBuild;
      return {
        id: build.id,
        module: build.module,
        version: build.version,
        result: build.result,
        finishedAt: build.finishedAt,
        recordedAt: build.recordedAt,
      };
    });
  }

  async #keepIfLatest(build: RecordedBuild): Promise<void> {
    try {
      await askStore('recording a build', () =>
        this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: { pk: latestPartition, sk: build.module },
            UpdateExpression:
              'SET id = :id, #module = :module, version = :version, #result = :result, finishedAt = :finishedAt, recordedAt = :recordedAt',
            ConditionExpression: newerWins,
            ExpressionAttributeNames: { '#module': 'module', '#result': 'result' },
            ExpressionAttributeValues: {
              ':id': build.id,
              ':module': build.module,
              ':version': build.version,
              ':result': build.result,
              ':finishedAt': build.finishedAt,
              ':recordedAt': build.recordedAt,
            },
            ...allOld,
          }),
        ),
      );
    } catch (error) {
      // A later build of the module is already the latest: this one is kept, not announced.
      if (!conditionFailed(error)) throw error;
    }
  }
}
