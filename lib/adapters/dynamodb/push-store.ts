import { MeshRaceError } from '../../core/mesh/errors.ts';
import type { NodeSnapshot } from '../../core/mesh/model.ts';
import type { PushStore, SendWrite } from '../../core/mesh/store.ts';
import { nodePartition } from './keys.ts';
import {
  allNodesIndex,
  deliveryItem,
  grantItem,
  markClears,
  markedPartition,
  markUpdates,
  provisionItem,
  snapshotFrom,
} from './mesh-items.ts';
import { type Item, itemAbsent, queryAll, TableStore, type TransactItem, transact } from './requests.ts';

// The named parts of every condition, so a refusal says which rule held it back.
const neverSent = itemAbsent;
const revisionIsNext = 'revision = :previous';
const provisionUnminted = itemAbsent;
const grantUnissued = itemAbsent;

/** Asked of every push request, so the push bench can count what a push costs. */
const capacity = { ReturnConsumedCapacity: 'TOTAL' } as const;
const store = 'the inventory table';

/** Compose-and-send's reads and writes on the inventory table; item shapes are in mesh-items.ts. */
export class DynamoDBPushStore extends TableStore implements PushStore {
  async readNode(node: string): Promise<NodeSnapshot | undefined> {
    return snapshotFrom(node, await this.#partition(node));
  }

  async send(write: SendWrite): Promise<void> {
    const items: TransactItem[] = [
      {
        Put: {
          TableName: this.tableName,
          Item: deliveryItem(write),
          ConditionExpression: write.previousRevision === undefined ? neverSent : revisionIsNext,
          ...(write.previousRevision !== undefined
            ? { ExpressionAttributeValues: { ':previous': write.previousRevision } }
            : {}),
        },
      },
    ];
    for (const mint of write.mints) {
      items.push(
        {
          Put: {
            TableName: this.tableName,
            Item: provisionItem(mint),
            ConditionExpression: provisionUnminted,
          },
        },
        { Put: { TableName: this.tableName, Item: grantItem(mint), ConditionExpression: grantUnissued } },
      );
    }
    const providers = new Set(write.mints.map((mint) => mint.providerNode).filter((n) => n !== write.node));
    for (const provider of providers) items.push(...markUpdates(this.tableName, provider, this.now()));
    const markAt = items.length;
    if (write.mark !== undefined) items.push(...markClears(this.tableName, write.node, write.mark));
    const failed = await this.#transact(items);
    if (!failed) return;
    const lost = failed.findIndex(Boolean);
    const race = lost === 0 ? 'revision' : lost === markAt ? 'mark' : 'mint';
    throw new MeshRaceError(race, failed[lost]?.old);
  }

  async clearMark(node: string, mark: number): Promise<void> {
    // A newer mark that came in since the read stays (the condition fails), and the next round looks again.
    await this.#transact(markClears(this.tableName, node, mark));
  }

  /** Strongly consistent: a mark written a moment ago is seen (see mesh-items.ts). */
  async listMarked(): Promise<string[]> {
    const items = await queryAll(this.client, store, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': markedPartition },
      ConsistentRead: true,
      ...capacity,
    });
    return items.map((item) => String(item.sk));
  }

  /** Through gsi1, which may lag: the audit adds the marked nodes to it (lib/core/mesh/push.ts). */
  async listNodes(): Promise<string[]> {
    const items = await queryAll(this.client, store, {
      TableName: this.tableName,
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :index',
      ExpressionAttributeValues: { ':index': allNodesIndex },
      ...capacity,
    });
    return items.map((item) => String(item.gsi1sk));
  }

  #partition(node: string): Promise<Item[]> {
    return queryAll(this.client, store, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': nodePartition(node) },
      ConsistentRead: true,
      ...capacity,
    });
  }

  #transact(items: readonly TransactItem[]) {
    return transact(this.client, store, items, capacity);
  }
}
