import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ModuleNotFoundError } from '../../core/mesh/errors.ts';
import type { ModuleVersions } from '../../core/ports.ts';
import { askStore } from '../../core/unavailable.ts';
import { assignmentKey, carrierPrefix, markUpdates, moduleKey, modulePartition } from './mesh-items.ts';
import { allOld, conditionFailed, itemPresent, queryAll, TableStore, transact } from './requests.ts';

// An unknown module is refused, not invented: a record with no kind would block its first
// `assign --provides` for good.
const moduleKnown = itemPresent;
const versionIs = 'version = :version';
const moduleAssigned = itemPresent;
const notYetAtVersion = '(attribute_not_exists(version) OR version <> :version)';

const store = 'the inventory table';

/**
 * Sets a module's current version for the queue's upgrade handling: the module item, then each
 * carrier's assignment with its stale mark in one transaction, so `push --behind` finds them.
 * Item shapes are in mesh-items.ts.
 */
export class DynamoDBModuleVersions extends TableStore implements ModuleVersions {
  async setModuleVersion(module: string, version: string): Promise<{ readonly carriers: readonly string[] }> {
    try {
      await askStore(store, () =>
        this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: moduleKey(module),
            UpdateExpression: 'SET version = :version',
            ConditionExpression: moduleKnown,
            ExpressionAttributeValues: { ':version': version },
            ...allOld,
          }),
        ),
      );
    } catch (error) {
      if (conditionFailed(error)) throw new ModuleNotFoundError(module, { cause: error });
      throw error;
    }
    // Strongly consistent, in the module's own partition: a node assigned the module a moment
    // before is a carrier too (an index could still miss it, and it would keep the old version).
    const carriers = await queryAll(this.client, store, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :carrier)',
      ExpressionAttributeValues: { ':pk': modulePartition(module), ':carrier': carrierPrefix },
      ConsistentRead: true,
    });
    for (const carrier of carriers) {
      const node = String(carrier.node);
      // A newer upgrade that already moved the module on leaves this one's carriers alone, and a
      // carrier already at this version (or no longer a carrier) is not marked: a failed
      // condition here means there is nothing to do.
      await transact(this.client, store, [
        {
          ConditionCheck: {
            TableName: this.tableName,
            Key: moduleKey(module),
            ConditionExpression: versionIs,
            ExpressionAttributeValues: { ':version': version },
          },
        },
        {
          Update: {
            TableName: this.tableName,
            Key: assignmentKey(node, module),
            UpdateExpression: 'SET version = :version',
            ConditionExpression: `${moduleAssigned} AND ${notYetAtVersion}`,
            ExpressionAttributeValues: { ':version': version },
          },
        },
        ...markUpdates(this.tableName, node, this.now()),
      ]);
    }
    return { carriers: carriers.map((item) => String(item.node)) };
  }
}
