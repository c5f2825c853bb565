import type { RelationRef, RemovalPlan } from '../../core/mesh/removal.ts';
import {
  assignmentKey,
  carrierKey,
  consumedByKey,
  grantKeyOf,
  markedKey,
  markIsAsSeen,
  markKey,
  markUpdates,
  nodeKey,
  provisionKeyOf,
  relationKeyOf,
  unmarked,
} from '../dynamodb/mesh-items.ts';
import { type Item, itemPresent, type TransactItem } from '../dynamodb/requests.ts';

type Key = { readonly pk: string; readonly sk: string };
type Where = { readonly inventory: string; readonly identity: string };

const stillThere = itemPresent;
const counted = 'consumedBy = :seen';
const neverCounted = 'attribute_not_exists(consumedBy) OR consumedBy = :zero';

/**
 * The one transaction that carries out a removal plan (lib/server/core/mesh/removal.ts), from the
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
  // Counts go down by what goes, summed per item: two relations to one provider are two less.
  const counts = new Map<string, { key: Key; deltas: Map<string, number> }>();
  const countDown = (key: Key, count: string) => {
    const id = `${where.inventory}|${key.pk}|${key.sk}`;
    const entry = counts.get(id) ?? { key, deltas: new Map<string, number>() };
    entry.deltas.set(count, (entry.deltas.get(count) ?? 0) - 1);
    counts.set(id, entry);
  };

  if (plan.node) {
    for (const item of read) {
      const key = { pk: String(item.pk), sk: String(item.sk) };
      if (key.sk === 'mark') {
        put(where.inventory, key, {
          Delete: {
            TableName: where.inventory,
            Key: key,
            ConditionExpression: markIsAsSeen,
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
    countDown(nodeKey(node), 'modules');
  }
  for (const relation of plan.relations) {
    withdraw(relation, remove);
    countDown(assignmentKey(relation.providerNode, relation.providerModule), 'consumedBy');
    countDown(nodeKey(relation.consumerNode), 'consumes');
    countDown(nodeKey(relation.providerNode), 'consumers');
  }
  for (const { key, deltas } of counts.values()) {
    const names = [...deltas.keys()];
    put(where.inventory, key, {
      Update: {
        TableName: where.inventory,
        Key: key,
        UpdateExpression: `ADD ${names.map((_name, index) => `#count${index} :less${index}`).join(', ')}`,
        ConditionExpression: stillThere,
        ExpressionAttributeNames: Object.fromEntries(names.map((name, index) => [`#count${index}`, name])),
        ExpressionAttributeValues: Object.fromEntries(
          names.map((name, index) => [`:less${index}`, deltas.get(name) as number]),
        ),
      },
    });
  }
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
 * the provider-side entry and the grant on the provider's. The counts it leaves go down with
 * the rest of the removal's (unless their items go in the same removal).
 */
function withdraw(relation: RelationRef, remove: (key: Key, conditional?: boolean) => void) {
  remove(relationKeyOf(relation.consumerNode, relation), true);
  remove(provisionKeyOf(relation));
  remove(consumedByKey(relation));
  remove(grantKeyOf(relation));
}
