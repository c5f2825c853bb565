import type { SealingFollowUp } from '../../core/control/ports.ts';
import { MeshRaceError } from '../../core/mesh/errors.ts';
import type { Provision } from '../../core/mesh/model.ts';
import { nodePartition } from '../dynamodb/keys.ts';
import { grantKeyOf, markUpdates, provisionKeyOf, snapshotFrom } from '../dynamodb/mesh-items.ts';
import { queryAll, TableStore, type TransactItem, transact, transactionLimit } from '../dynamodb/requests.ts';

// A withdrawal takes only the mint it read: one minted again meanwhile (to the new key) stays.
const generationAsRead = 'generation = :generation';

const store = 'the inventory table';
/** Nodes marked per transaction: two items each. */
const marksPerTransaction = transactionLimit / 2;
/** Withdrawals per transaction: two items each, and up to two more for the other side's mark. */
const withdrawalsPerTransaction = Math.floor(transactionLimit / 4);

/**
 * The inventory's side of a node's keys changing (lib/server/core/control/settle.ts, `enrolled`): marks,
 * and withdrawals while the node has no enrolment, in transactions of at most 100 items, so a
 * provider with thousands of consumers is followed in steps of its own size, never one write.
 */
export class DynamoDBSealingFollowUp extends TableStore implements SealingFollowUp {
  async followKeys(node: string) {
    const items = await queryAll(this.client, store, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': nodePartition(node) },
      ConsistentRead: true,
    });
    const snapshot = snapshotFrom(node, items);
    if (!snapshot) return undefined;
    const now = this.now();
    if (snapshot.sealingKey) {
      // The node's own compose changes only when something of it is sealed: its relations or grants.
      const own = snapshot.relations.length > 0 || snapshot.grants.length > 0 ? [node] : [];
      const marked = [...new Set([...own, ...snapshot.dependents.map((d) => d.consumerNode)])];
      for (let at = 0; at < marked.length; at += marksPerTransaction)
        await this.#write(
          marked.slice(at, at + marksPerTransaction).flatMap((n) => markUpdates(this.tableName, n, now)),
        );
      return { enrolled: true, marked, withdrawn: 0 };
    }
    const withdrawals = [...snapshot.provisions, ...snapshot.grants.filter((g) => g.consumerNode !== node)];
    const marked = new Set<string>([node]);
    for (let at = 0; at < withdrawals.length; at += withdrawalsPerTransaction) {
      const step = withdrawals.slice(at, at + withdrawalsPerTransaction);
      const others = new Set(step.map((p) => (p.consumerNode === node ? p.providerNode : p.consumerNode)));
      others.delete(node);
      for (const other of others) marked.add(other);
      await this.#write([
        ...step.flatMap((p) => this.#withdrawal(p)),
        ...[...others].flatMap((other) => markUpdates(this.tableName, other, now)),
      ]);
    }
    if (withdrawals.length === 0) return { enrolled: false, marked: [], withdrawn: 0 };
    await this.#write(markUpdates(this.tableName, node, now));
    return { enrolled: false, marked: [...marked], withdrawn: withdrawals.length };
  }

  #withdrawal(p: Provision): TransactItem[] {
    const asRead = {
      ConditionExpression: generationAsRead,
      ExpressionAttributeValues: { ':generation': p.generation },
    };
    return [
      { Delete: { TableName: this.tableName, Key: provisionKeyOf(p), ...asRead } },
      { Delete: { TableName: this.tableName, Key: grantKeyOf(p), ...asRead } },
    ];
  }

  async #write(items: readonly TransactItem[]) {
    const failed = await transact(this.client, store, items);
    if (failed) throw new MeshRaceError('mint', failed.find(Boolean)?.old);
  }
}
