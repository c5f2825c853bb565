import { holdsNodes, notSentCount, type RolloutRecord, type Wave } from '../../core/rollout/record.ts';
import type { TransactItem } from '../dynamodb/requests.ts';
import { keptOf } from './rollout-chunks.ts';

/**
 * Which rollouts hold nodes back, in the inventory table, for every send to read
 * (hold-reader.ts, docs/decisions/held-back.md):
 *
 * | pk                 | sk             | attributes |
 * |--------------------|----------------|------------|
 * | `rollouts#holding` | `<rollout id>` | state, current (the cut index of the last wave sent, -1 before the first), notSent (its nodes in waves not sent), unsentNames (the first few of them by name) |
 *
 * Present exactly while the rollout holds its nodes (claiming, running, paused, halted), put or
 * deleted in the transaction of its header (rollout-store.ts), so a send never reads a rollout's
 * hold and header apart. A small partition: one item per rollout that holds.
 */
export const holdingPartition = 'rollouts#holding';
const holdingKey = (id: string) => ({ pk: holdingPartition, sk: id });

/** The holding item's put (or delete) for the record as written, its waves as kept (with their cut indexes). */
export function holdingItem(tableName: string, record: RolloutRecord, waves: readonly Wave[]): TransactItem {
  if (!holdsNodes(record.state)) return { Delete: { TableName: tableName, Key: holdingKey(record.id) } };
  const some = (record.unsentNames ?? []).slice(0, namedNodes);
  return {
    Update: {
      TableName: tableName,
      Key: holdingKey(record.id),
      UpdateExpression: 'SET #state = :state, #current = :current, notSent = :notSent, unsentNames = :some',
      ExpressionAttributeNames: { '#state': 'state', '#current': 'current' },
      ExpressionAttributeValues: {
        ':state': record.state,
        ':current': sentCut(waves, record.current),
        ':notSent': notSentCount(record),
        ':some': some,
      },
    },
  };
}

/** How many of the nodes it holds back a holding item names. */
const namedNodes = 10;

/**
 * The cut index of the last wave sent (-1 before the first): a claim names the wave its node was
 * cut into, so a node is released once that index is sent (lib/server/core/hold/held-back.ts).
 */
function sentCut(waves: readonly Wave[], current: number): number {
  const wave = current >= 0 ? waves[current] : undefined;
  return wave ? keptOf(wave).cut : -1;
}
