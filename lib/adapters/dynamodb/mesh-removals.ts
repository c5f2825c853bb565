import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { MeshRaceError, NodeNotFoundError, RemovalTooLargeError } from '../../core/mesh/errors.ts';
import type { NodeSnapshot } from '../../core/mesh/model.ts';
import type { RemovalPlan } from '../../core/mesh/removal.ts';
import type { MeshRemovals } from '../../core/mesh/store.ts';
import { nodePartition } from './keys.ts';
import { snapshotFrom } from './mesh-items.ts';
import { removalItems } from './mesh-removal.ts';
import { queryAll, transact, transactionLimit } from './requests.ts';

const store = 'the inventory table';

/**
 * Removals on the inventory table and, when a node goes, its keys in the identity table: one
 * transaction across both, so a removed node's host is refused at once and nothing is left
 * half-removed. What a removal takes is decided by the core from the node's partition read
 * whole (lib/core/mesh/removal.ts); mesh-removal.ts turns that into the transaction.
 */
export class DynamoDBMeshRemovals implements MeshRemovals {
  readonly #client: DynamoDBDocumentClient;
  readonly #inventory: string;
  readonly #identity: string;
  readonly #now: () => string;

  constructor(options: {
    readonly client: DynamoDBDocumentClient;
    readonly inventoryTable: string;
    readonly identityTable: string;
    readonly now?: () => string;
  }) {
    this.#client = options.client;
    this.#inventory = options.inventoryTable;
    this.#identity = options.identityTable;
    this.#now = options.now ?? (() => new Date().toISOString());
  }

  async remove(node: string, plan: (snapshot: NodeSnapshot) => RemovalPlan): Promise<RemovalPlan> {
    const read = await this.#partition(this.#inventory, node);
    const snapshot = snapshotFrom(node, read);
    if (!snapshot) throw new NodeNotFoundError(node);
    const decided = plan(snapshot);
    const keys = decided.node ? await this.#partition(this.#identity, node) : [];
    const items = removalItems(
      decided,
      read,
      keys,
      { inventory: this.#inventory, identity: this.#identity },
      this.#now(),
    );
    if (items.length > transactionLimit) {
      throw new RemovalTooLargeError(decided.node ?? `from ${node}`, items.length, transactionLimit);
    }
    const failed = await transact(this.#client, store, items);
    if (failed) throw new MeshRaceError('model', failed.find(Boolean)?.old);
    return decided;
  }

  #partition(table: string, node: string) {
    return queryAll(this.#client, store, {
      TableName: table,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': nodePartition(node) },
      ConsistentRead: true,
    });
  }
}
