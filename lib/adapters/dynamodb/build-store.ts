import { ConditionalCheckFailedException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { StoreUnavailableError } from '../../core/control/errors.ts';
import type { BuildBody } from '../../core/control/messages.ts';
import type { BuildStore, RecordedBuild } from '../../core/control/ports.ts';
import { isTransientFault } from '../../core/faults.ts';

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
export const succeededBuildsPartition = 'builds#succeeded';
export const buildItemKey = (id: string) => ({ pk: `build#${id}`, sk: 'build' }) as const;

const buildNotKept = 'attribute_not_exists(pk)';

export function createBuildStore(client: DynamoDBClient, tableName: string): BuildStore {
  const documents = DynamoDBDocumentClient.from(client);
  return {
    async recordBuild(build: BuildBody, recordedAt: string) {
      try {
        await documents.send(
          new PutCommand({
            TableName: tableName,
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
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        );
        return 'recorded';
      } catch (error) {
        // The first result for a build id is the one kept; asking again is not a conflict.
        if (error instanceof ConditionalCheckFailedException) return 'repeat';
        if (isTransientFault(error)) throw new StoreUnavailableError('recording a build', { cause: error });
        throw error;
      }
    },

    async latestSuccessfulBuilds() {
      const latest = new Map<string, RecordedBuild>();
      let startKey: Record<string, unknown> | undefined;
      try {
        do {
          const page = await documents.send(
            new QueryCommand({
              TableName: tableName,
              IndexName: 'gsi1',
              KeyConditionExpression: 'gsi1pk = :succeeded',
              ExpressionAttributeValues: { ':succeeded': succeededBuildsPartition },
              ExclusiveStartKey: startKey,
            }),
          );
          for (const item of page.Items ?? []) {
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
          startKey = page.LastEvaluatedKey;
        } while (startKey);
      } catch (error) {
        if (isTransientFault(error)) throw new StoreUnavailableError('reading builds', { cause: error });
        throw error;
      }
      return [...latest.values()];
    },
  };
}
