import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { MeshRaceError } from '../../core/mesh/errors.ts';
import type { NodeSnapshot, Provision } from '../../core/mesh/model.ts';
import type { PushStore, SendWrite } from '../../core/mesh/store.ts';
import { askStore } from '../../core/unavailable.ts';
import { nodePartition } from './keys.ts';
import {
  allNodesIndex,
  assignmentFrom,
  deliveryItem,
  grantItem,
  markedIndex,
  markKey,
  markUpdate,
  provisionFrom,
  provisionItem,
  relationFrom,
  sentFrom,
} from './mesh-items.ts';
import {
  allOld,
  conditionFailed,
  type Item,
  itemAbsent,
  queryAll,
  TableStore,
  type TransactItem,
  transact,
} from './requests.ts';

// The named parts of every condition, so a refusal says which rule held it back.
const neverSent = itemAbsent;
const revisionIsNext = 'revision = :previous';
const provisionUnminted = itemAbsent;
const grantUnissued = itemAbsent;
const markUnchanged = 'marks = :seen';

/** Asked of every push request, so the push bench can count what a push costs. */
const capacity = { ReturnConsumedCapacity: 'TOTAL' } as const;
const store = 'the inventory table';

/** Compose-and-send's reads and writes on the inventory table; item shapes are in mesh-items.ts. */
export class DynamoDBPushStore extends TableStore implements PushStore {
  async readNode(node: string): Promise<NodeSnapshot | undefined> {
    const items = await this.#partition(node);
    if (!items.some((item) => item.sk === 'node')) return undefined;
    const assignments = [];
    const relations = [];
    const provisions: Provision[] = [];
    const grants: Provision[] = [];
    let sent: NodeSnapshot['sent'];
    let mark: number | undefined;
    for (const item of items) {
      const sk = String(item.sk);
      if (sk.startsWith('module#')) assignments.push(assignmentFrom(item));
      else if (sk.startsWith('consumes#')) relations.push(relationFrom(item));
      else if (sk.startsWith('provision#')) provisions.push(provisionFrom(item));
      else if (sk.startsWith('grant#')) grants.push(provisionFrom(item));
      else if (sk === 'delivery') sent = sentFrom(item);
      else if (sk === 'mark') mark = Number(item.marks ?? 0);
    }
    return { node, assignments, relations, provisions, grants, sent, mark };
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
    for (const provider of providers) items.push(markUpdate(this.tableName, provider, this.now()));
    if (write.mark !== undefined) {
      items.push({
        Delete: {
          TableName: this.tableName,
          Key: markKey(write.node),
          ConditionExpression: markUnchanged,
          ExpressionAttributeValues: { ':seen': write.mark },
        },
      });
    }
    const failed = await this.#transact(items);
    if (!failed) return;
    const lost = failed.findIndex(Boolean);
    const race =
      lost === 0 ? 'revision' : lost === items.length - 1 && write.mark !== undefined ? 'mark' : 'mint';
    throw new MeshRaceError(race, failed[lost]?.old);
  }

  async clearMark(node: string, mark: number): Promise<void> {
    try {
      await askStore(store, () =>
        this.client.send(
          new DeleteCommand({
            TableName: this.tableName,
            Key: markKey(node),
            ConditionExpression: markUnchanged,
            ExpressionAttributeValues: { ':seen': mark },
            ...allOld,
            ...capacity,
          }),
        ),
      );
    } catch (error) {
      // A newer mark came in since the read: it stays, and the next round looks again.
      if (!conditionFailed(error)) throw error;
    }
  }

  async listMarked(): Promise<string[]> {
    return this.#queryIndex(markedIndex);
  }

  async listNodes(): Promise<string[]> {
    return this.#queryIndex(allNodesIndex);
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

  async #queryIndex(index: string): Promise<string[]> {
    const items = await queryAll(this.client, store, {
      TableName: this.tableName,
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :index',
      ExpressionAttributeValues: { ':index': index },
      ...capacity,
    });
    return items.map((item) => String(item.gsi1sk));
  }

  #transact(items: readonly TransactItem[]) {
    return transact(this.client, store, items, capacity);
  }
}
