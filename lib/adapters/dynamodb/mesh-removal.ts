import type { RelationRef, RemovalPlan } from '../../core/mesh/removal.ts';
import {
  assignmentKey,
  carrierKey,
  consumedByKey,
  grantKeyOf,
  markedKey,
  markKey,
  markUpdates,
  provisionKeyOf,
  relationKeyOf,
} from './mesh-items.ts';
import { type Item, itemPresent, type TransactItem } from './requests.ts';

/** DynamoDB's bound on the items of one TransactWriteItems. */
export const transactionLimit = 100;

type Key = { readonly pk: string; readonly sk: string };
type Where = { readonly inventory: string; readonly identity: string };

const stillThere = itemPresent;
const counted = 'consumedBy = :seen';
const neverCounted = 'attribute_not_exists(consumedBy) OR consumedBy = :zero';
const markUnchanged = 'marks = :seen';
const unmarked = 'attribute_not_exists(pk)';

/**
 * The one transaction that carries out a removal plan (lib/core/mesh/removal.ts), from the
 * removed-from node's partition as it was read (`read`) and, when the node itself goes, its key
 * items in the identity table (`keys`). Every item the plan was made from is a condition: an
 * item that vanished, a provider that gained a consumer (its `consumedBy` moved) or a node that
 * was changed (its mark moved) since the read makes the whole transaction fail, and nothing is
 * half-done. Item layouts are in mesh-items.ts.
 */
export function removalItems(
  plan: RemovalPlan,
  read: readonly Item[],
  keys: readonly Item[],
  where: Where,
  markedAt: string,
): TransactItem[] {
  const operations = new Map<string, TransactItem>();
  const put = (table: string, key: Key, item: TransactItem) => {
    const id = `${table}|${key.pk}|${key.sk}`;
    const kept = operations.get(id);
    // A delete is never replaced: what goes, goes, and nothing else is asked of it.
    if (!kept || !('Delete' in kept)) operations.set(id, item);
  };
  const remove = (key: Key, conditional = false, table = where.inventory) =>
    put(table, key, {
      Delete: { TableName: table, Key: key, ...(conditional ? { ConditionExpression: stillThere } : {}) },
    });
  const readItem = (key: Key) => read.find((item) => item.pk === key.pk && item.sk === key.sk);

  if (plan.node) {
    for (const item of read) {
      const key = { pk: String(item.pk), sk: String(item.sk) };
      if (key.sk === 'mark') {
        put(where.inventory, key, {
          Delete: {
            TableName: where.inventory,
            Key: key,
            ConditionExpression: markUnchanged,
            ExpressionAttributeValues: { ':seen': item.marks },
          },
        });
      } else if (!key.sk.startsWith('module#')) remove(key, true);
    }
    if (!read.some((item) => item.sk === 'mark')) {
      const key = markKey(plan.node);
      put(where.inventory, key, {
        ConditionCheck: { TableName: where.inventory, Key: key, ConditionExpression: unmarked },
      });
    }
    remove(markedKey(plan.node));
    for (const item of keys) remove({ pk: String(item.pk), sk: String(item.sk) }, true, where.identity);
  }
  for (const { node, module } of plan.assignments) {
    const key = assignmentKey(node, module);
    const seen = Number(readItem(key)?.consumedBy ?? 0);
    put(where.inventory, key, {
      Delete: {
        TableName: where.inventory,
        Key: key,
        ConditionExpression: seen > 0 ? counted : neverCounted,
        ExpressionAttributeValues: seen > 0 ? { ':seen': seen } : { ':zero': 0 },
      },
    });
    remove(carrierKey(module, node));
  }
  for (const relation of plan.relations) withdraw(relation, remove, put, where.inventory);
  for (const node of plan.marked) {
    for (const item of markUpdates(where.inventory, node, markedAt)) {
      const body = Object.values(item)[0] as { Key?: Key; Item?: Key };
      put(where.inventory, (body.Key ?? body.Item) as Key, item);
    }
  }
  return [...operations.values()];
}

/**
 * One relation withdrawn on both sides: the relation and its provision on the consumer's side,
 * the provider-side entry and the grant on the provider's, and the provider's count of
 * consumers down by one (unless the provider's assignment goes in the same removal).
 */
function withdraw(
  relation: RelationRef,
  remove: (key: Key, conditional?: boolean) => void,
  put: (table: string, key: Key, item: TransactItem) => void,
  table: string,
) {
  remove(relationKeyOf(relation.consumerNode, relation), true);
  remove(provisionKeyOf(relation));
  remove(consumedByKey(relation));
  remove(grantKeyOf(relation));
  const provider = assignmentKey(relation.providerNode, relation.providerModule);
  put(table, provider, {
    Update: {
      TableName: table,
      Key: provider,
      UpdateExpression: 'ADD consumedBy :less',
      ConditionExpression: stillThere,
      ExpressionAttributeValues: { ':less': -1 },
    },
  });
}
