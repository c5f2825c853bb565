import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { mapLimit } from '../../core/map-limit.ts';
import { RolloutOverlapError } from '../../core/rollout/errors.ts';
import { holdsNodes, type RolloutState } from '../../core/rollout/record.ts';
import { StoreUnavailableError } from '../../core/unavailable.ts';
import { getItems, itemAbsent, type TransactItem, transact } from './requests.ts';

/**
 * Which rollout holds each node, in the inventory table:
 *
 * | pk                       | sk      | attributes |
 * |--------------------------|---------|------------|
 * | `rollout-claim#<node>`   | `claim` | rollout (its id), wave (its index when cut), claimedAt |
 *
 * A partition of its own per node, not the node's `node#` partition, so `mesh status` and a
 * node's removal never meet it. A start claims each of its own nodes (in transactions,
 * `claimable = unclaimed OR claimedByThis OR claimedByStale`; 50 to a transaction), all before its header is written;
 * a batch whose condition fails lets go of what the start claimed and refuses it, naming the
 * rollout that holds the nodes: so of two starts over the same nodes at most one is recorded.
 * A rollout that ends (done, aborted) lets its claims go (`claimedByThis`); a claim left by a
 * start or an end that died half-way is stale once its rollout ended, or, with no record at all,
 * after `unrecordedStaleMs`, and the next start takes it over.
 */
export const claimPartition = (node: string) => `rollout-claim#${node}`;
const claimKey = (node: string) => ({ pk: claimPartition(node), sk: 'claim' });

const unclaimed = itemAbsent;
const claimedByThis = '#rollout = :mine';
const claimedByStale = '#rollout = :stale';
/** Longer than any start takes (a request's time): a claim older, of no recorded rollout, was a start that died. */
export const unrecordedStaleMs = 10 * 60_000;
/** Transactions of claims in flight at once. */
const claimsInFlight = 4;
/**
 * Claims a transaction: DynamoDB takes 100, but DynamoDB Local on a busy machine takes over the
 * client's 3 s for a transaction of 100 while others wait on it; 50 keeps each one short.
 */
const claimsPerTransaction = 50;
/** A transaction of claims that timed out is asked again: a claim put twice by the same start holds (`claimedByThis`). */
const claimTries = 3;

const what = 'the inventory table';

type Claim = { readonly rollout: string; readonly wave: number; readonly claimedAt: string };
type HolderState = (id: string) => Promise<RolloutState | undefined>;

/** The same transaction asked again while the store answers "not now". */
async function again<T>(ask: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries += 1) {
    try {
      return await ask();
    } catch (error) {
      if (!(error instanceof StoreUnavailableError) || tries === claimTries) throw error;
    }
  }
}

export class RolloutClaims {
  readonly #client: DynamoDBDocumentClient;
  readonly #tableName: string;
  readonly #now: () => string;

  constructor(client: DynamoDBDocumentClient, tableName: string, now: () => string) {
    this.#client = client;
    this.#tableName = tableName;
    this.#now = now;
  }

  /** Each node's claim, of those claimed. */
  async of(nodes: readonly string[]): Promise<Map<string, Claim>> {
    const items = await getItems(this.#client, what, this.#tableName, nodes.map(claimKey));
    const claims = new Map<string, Claim>();
    for (const node of nodes) {
      const item = items.get(`${claimPartition(node)}|claim`);
      if (item) claims.set(node, item as unknown as Claim);
    }
    return claims;
  }

  /**
   * Claims each node for rollout `id` (its wave beside it), or changes nothing and throws
   * RolloutOverlapError naming the holder that holds most of them and how many it holds.
   */
  async claim(id: string, nodes: ReadonlyMap<string, number>, stateOf: HolderState): Promise<void> {
    const stale = await this.#staleOrRefuse(id, [...nodes.keys()], stateOf);
    const batches: string[][] = [];
    const names = [...nodes.keys()].sort();
    for (let at = 0; at < names.length; at += claimsPerTransaction)
      batches.push(names.slice(at, at + claimsPerTransaction));
    const claimedAt = this.#now();
    const taken: string[][] = [];
    let lost: string | undefined;
    await mapLimit(batches, claimsInFlight, async (batch) => {
      if (lost !== undefined) return;
      const items: TransactItem[] = batch.map((node) => {
        const was = stale.get(node);
        return {
          Put: {
            TableName: this.#tableName,
            Item: { ...claimKey(node), rollout: id, wave: nodes.get(node) ?? 0, claimedAt },
            ConditionExpression: [unclaimed, claimedByThis, ...(was ? [claimedByStale] : [])].join(' OR '),
            ExpressionAttributeNames: { '#rollout': 'rollout' },
            ExpressionAttributeValues: { ':mine': id, ...(was ? { ':stale': was } : {}) },
          },
        };
      });
      const failed = await again(() => transact(this.#client, what, items));
      if (!failed) {
        taken.push(batch);
        return;
      }
      const holder = failed.find((f) => f?.old)?.old?.rollout;
      lost = typeof holder === 'string' ? holder : 'another rollout';
    });
    if (lost === undefined) return;
    await this.release(id, taken.flat());
    // what holds them now, counted; the holder the lost condition met, when it has let go since
    await this.#staleOrRefuse(id, [...nodes.keys()], stateOf);
    throw new RolloutOverlapError(lost, 1, 'starting');
  }

  /** Lets go of the claims of rollout `id` on these nodes; a claim another rollout holds now is left. */
  async release(id: string, nodes: readonly string[]): Promise<void> {
    const batches: string[][] = [];
    for (let at = 0; at < nodes.length; at += claimsPerTransaction)
      batches.push(nodes.slice(at, at + claimsPerTransaction));
    await mapLimit(batches, claimsInFlight, async (first) => {
      let batch = first;
      while (batch.length > 0) {
        const asked = batch;
        const failed = await again(() =>
          transact(
            this.#client,
            what,
            asked.map((node) => ({
              Delete: {
                TableName: this.#tableName,
                Key: claimKey(node),
                ConditionExpression: `attribute_not_exists(pk) OR ${claimedByThis}`,
                ExpressionAttributeNames: { '#rollout': 'rollout' },
                ExpressionAttributeValues: { ':mine': id },
              },
            })),
          ),
        );
        if (!failed) return;
        batch = batch.filter((_, index) => !failed[index]);
      }
    });
  }

  /** The stale claims among these nodes' (node → the id that left it); RolloutOverlapError if any is live. */
  async #staleOrRefuse(
    id: string,
    nodes: readonly string[],
    stateOf: HolderState,
  ): Promise<Map<string, string>> {
    const claims = await this.of(nodes);
    const byHolder = new Map<string, { count: number; oldest: string }>();
    for (const claim of claims.values()) {
      if (claim.rollout === id) continue;
      const seen = byHolder.get(claim.rollout);
      byHolder.set(claim.rollout, {
        count: (seen?.count ?? 0) + 1,
        oldest: seen && seen.oldest < claim.claimedAt ? seen.oldest : claim.claimedAt,
      });
    }
    const live: Array<{ holder: string; count: number; state: string }> = [];
    for (const [holder, { count, oldest }] of byHolder) {
      const state = await stateOf(holder);
      if (state === undefined && Date.parse(this.#now()) - Date.parse(oldest) < unrecordedStaleMs)
        live.push({ holder, count, state: 'starting' });
      else if (state !== undefined && holdsNodes(state)) live.push({ holder, count, state });
    }
    if (live.length > 0) {
      const [most] = live.sort((a, b) => b.count - a.count);
      if (most) throw new RolloutOverlapError(most.holder, most.count, most.state);
    }
    const stale = new Map<string, string>();
    for (const [node, claim] of claims) if (claim.rollout !== id) stale.set(node, claim.rollout);
    return stale;
  }
}
