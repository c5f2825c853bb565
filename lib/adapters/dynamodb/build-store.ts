import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { BuildBody } from '../../core/control/messages.ts';
import type { BuildStore, RecordedBuild } from '../../core/control/ports.ts';
import { askStore } from '../../core/unavailable.ts';
import { allOld, conditionFailed, itemAbsent, queryAll, TableStore } from './requests.ts';

/**
 * Build results, in the inventory table, one item per build id, kept once:
 *
 * | pk            | sk      | gsi1pk (successful only) | gsi1sk                             | attributes |
 * |---------------|---------|--------------------------|------------------------------------|------------|
 * | `build#<id>`  | `build` | `builds#succeeded`       | `<module>#<finishedAt>#<id>`       | id, module, version, result, finishedAt, recordedAt |
 *
 * Access: a conditional PutItem per result (a repeat is refused and ignored); catch-up reads
 * the sparse gsi1 partition `builds#succeeded` in order and keeps the last build per module,
 * which is the latest successful one (module names cannot hold `#`, ISO times sort).
 */
const succeededBuildsPartition = 'builds#succeeded';
const buildItemKey = (id: string) => ({ pk: `build#${id}`, sk: 'build' });

const buildNotKept = itemAbsent;

export class DynamoDBBuildStore extends TableStore implements BuildStore {
  async recordBuild(build: BuildBody, recordedAt: string): Promise<'recorded' | 'repeat'> {
    try {
      await askStore('recording a build', () =>
        this.client.send(
          new PutCommand({
            TableName: this.tableName,
            Item: {
              ...buildItemKey(build.id),
              ...build,
              recordedAt,
              ...(build.result === 'succeeded'
                ? {
                    gsi1pk: succeededBuildsPartition,
                    gsi1sk: `${build.module}#${new Date(build.finishedAt).toISOString()}#${build.id}`,
                  }
                : {}),
            },
            ConditionExpression: buildNotKept,
            ...allOld,
          }),
        ),
      );
      return 'recorded';
    } catch (error) {
      // The first result for a build id is the one kept; asking again is not a conflict.
      if (conditionFailed(error)) return 'repeat';
      throw error;
    }
  }

  async latestSuccessfulBuilds(): Promise<readonly RecordedBuild[]> {
    const items = await queryAll(this.client, 'reading builds', {
      TableName: this.tableName,
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :succeeded',
      ExpressionAttributeValues: { ':succeeded': succeededBuildsPartition },
    });
    const latest = new Map<string, RecordedBuild>();
    for (const item of items) {
      const build = item as RecordedBuild;
      latest.set(build.module, {
        id: build.id,
        module: build.module,
        version: build.version,
        result: build.result,
        finishedAt: build.finishedAt,
        recordedAt: build.recordedAt,
      });
    }
    return [...latest.values()];
  }
}
