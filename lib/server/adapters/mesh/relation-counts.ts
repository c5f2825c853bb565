import { meshLimits } from '../../core/mesh/limits.ts';
import { nodeKey } from '../dynamodb/mesh-items.ts';
import { itemPresent, type TransactItem } from '../dynamodb/requests.ts';

const nodeExists = itemPresent;

/** A node item's count of what it holds, below its limit (counts start at the first ADD). */
export const below = (count: string, max: string) => `(attribute_not_exists(${count}) OR ${count} < ${max})`;

/**
 * A relation counted on both node items, each below its limit: the consumer's `consumes`, the
 * provider's `consumers`. On one node both counts are one update of its item (a transaction
 * touches an item once): the consumer's count, then the provider's, or one item for both.
 */
export function countRelation(tableName: string, consumerNode: string, providerNode: string): TransactItem[] {
  const update = (node: string, expression: string, condition: string, max: Record<string, number>) => ({
    Update: {
      TableName: tableName,
      Key: nodeKey(node),
      UpdateExpression: expression,
      ConditionExpression: `${nodeExists} AND ${condition}`,
      ExpressionAttributeValues: { ':one': 1, ...max },
    },
  });
  const consumes = below('consumes', ':maxConsumes');
  const consumers = below('consumers', ':maxConsumers');
  const maxConsumes = { ':maxConsumes': meshLimits.consumesPerNode };
  const maxConsumers = { ':maxConsumers': meshLimits.consumersPerNode };
  if (consumerNode === providerNode)
    return [
      update(consumerNode, 'ADD consumes :one, consumers :one', `${consumes} AND ${consumers}`, {
        ...maxConsumes,
        ...maxConsumers,
      }),
    ];
  return [
    update(consumerNode, 'ADD consumes :one', consumes, maxConsumes),
    update(providerNode, 'ADD consumers :one', consumers, maxConsumers),
  ];
}
