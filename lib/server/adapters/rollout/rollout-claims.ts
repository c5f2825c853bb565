import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { mapLimit } from '../../core/map-limit.ts';
import { RolloutOverlapError } from '../../core/rollout/errors.ts';
import { holdsNodes, type RolloutState } from '../../core/rollout/record.ts';
import { StoreUnavailableError } from '../../core/unavailable.ts';
import { getItems, itemAbsent, type TransactItem, transact } from '../dynamodb/requests.ts';

/**
 * Which rollout holds each node, in the inventory table:
 *
 * | pk                       | sk      | attributes |
 * |--------------------------|---------|------------|
 * | `rollout-claim#<node>`   | `claim` | rollout (its id), wave (its index when cut), claimedAt |
 *
 * A partition of its own per node, not the node's `node#` partition, so `mesh status` and a
 * node's removal never meet it. The driver of a claiming rollout claims its own nodes a step at
 * a time (in transactions, `claimable = unclaimed OR claimedByThis OR claimedByStale`; 50 to a
 * transaction), after its header is written; a claim that a live rollout (claiming, running,
 * paused, halted) holds, read before a round or met by a failed condition, refuses it, naming
 * that rollout: so of two rollouts claiming the same nodes at most one runs. A rollout that ends
 * (done, aborted, refused) lets its claims go (`claimedByThis`); a claim left by one that died
 * half-way is stale once its rollout ended, or, with no record at all, after
 * `unrecordedStaleMs`, and the next claim takes it over.
 */
export const claimPartition = (node: string) => `rollout-claim#${node}`;
export const claimKey = (node: string) => ({ pk: claimPartition(node), sk: 'claim' });

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
/**
 * Claims read and put together: four transactions in flight, four times over, so no slot idles
 * within a round and a step's time is checked every few seconds even on DynamoDB Local.
 */
const claimsPerRound = claimsPerTransaction * claimsInFlight * 4;
/** How many of the nodes a holder holds an overlap names. */
const namedNodes = 5;
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
   * Claims these nodes for rollout `id` (each beside the wave it was cut into), a round of
   * `claimsPerRound` at a time, starting no round after `deadline` (ms since the epoch) once one
   * is done: how many were claimed (a prefix of `nodes`), or the overlap met. Each round reads
   * its nodes' claims first: a live holder's refuses it, a stale one's is taken over.
   */
  async claimSome(
    id: string,
    nodes: ReadonlyArray<{ readonly node: string; readonly cut: number }>,
    stateOf: HolderState,
    deadline: number,
  ): Promise<{ readonly claimed: number } | { readonly overlap: RolloutOverlapError }> {
    let claimed = 0;
    while (claimed < nodes.length && (claimed === 0 || Date.now() < deadline)) {
      const round = nodes.slice(claimed, claimed + claimsPerRound);
      const names = round.map((n) => n.node);
      let stale: Map<string, string>;
      try {
        stale = await this.#staleOrRefuse(id, names, stateOf);
      } catch (error) {
        if (error instanceof RolloutOverlapError) return { overlap: error };
        throw error;
      }
      const lost = await this.#claimRound(id, round, stale);
      if (lost !== undefined) {
        // what holds them now, counted and named; the holder the lost condition met, when it has let go since
        try {
          await this.#staleOrRefuse(id, names, stateOf);
        } catch (error) {
          if (error instanceof RolloutOverlapError) return { overlap: error };
          throw error;
        }
        return { overlap: new RolloutOverlapError(lost.holder, 1, 'claiming', [lost.node]) };
      }
      claimed += round.length;
    }
    return { claimed };
  }

  /** One round's claims, `claimsInFlight` transactions at once; the first holder a condition met, if one did. */
  async #claimRound(
    id: string,
    round: ReadonlyArray<{ readonly node: string; readonly cut: number }>,
    stale: ReadonlyMap<string, string>,
  ): Promise<{ readonly holder: string; readonly node: string } | undefined> {
    const batches: Array<typeof round> = [];
    for (let at = 0; at < round.length; at += claimsPerTransaction)
      batches.push(round.slice(at, at + claimsPerTransaction));
    const claimedAt = this.#now();
    let lost: { holder: string; node: string } | undefined;
    await mapLimit(batches, claimsInFlight, async (batch) => {
      if (lost !== undefined) return;
      const items: TransactItem[] = batch.map(({ node, cut }) => {
        const was = stale.get(node);
        return {
          Put: {
            TableName: this.#tableName,
            Item: { ...claimKey(node), rollout: id, wave: cut, claimedAt },
            ConditionExpression: [unclaimed, claimedByThis, ...(was ? [claimedByStale] : [])].join(' OR '),
            ExpressionAttributeNames: { '#rollout': 'rollout' },
            ExpressionAttributeValues: { ':mine': id, ...(was ? { ':stale': was } : {}) },
          },
        };
      });
      const failed = await again(() => transact(this.#client, what, items));
      if (!failed) return;
      const index = failed.findIndex((f) => f?.old);
      const holder = failed[index]?.old?.rollout;
      lost = {
        holder: typeof holder === 'string' ? holder : 'another rollout',
        node: batch[Math.max(0, index)]?.node ?? '',
      };
    });
    return lost;
  }

  /**
   * Lets go of rollout `id`'s claims on these nodes a round at a time, starting no round after
   * `deadline` once one is done: how many it let go of (a prefix of `nodes`).
   */
  async releaseSome(id: string, nodes: readonly string[], deadline: number): Promise<number> {
    let released = 0;
    while (released < nodes.length && (released === 0 || Date.now() < deadline)) {
      const round = nodes.slice(released, released + claimsPerRound);
      await this.release(id, round);
      released += round.length;
    }
    return released;
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

  /**
   * Moves rollout `id`'s claims on these nodes to the wave `cut` (one its send moved them into,
   * ahead of the one they were cut into), so they count as released once that wave is sent; a
   * claim another rollout holds now is left.
   */
  async move(id: string, nodes: readonly string[], cut: number): Promise<void> {
    await mapLimit(nodes, claimsInFlight * 4, async (node) => {
      await again(() =>
        transact(this.#client, what, [
          {
            Update: {
              TableName: this.#tableName,
              Key: claimKey(node),
              UpdateExpression: 'SET wave = :cut',
              ConditionExpression: claimedByThis,
              ExpressionAttributeNames: { '#rollout': 'rollout' },
              ExpressionAttributeValues: { ':mine': id, ':cut': cut },
            },
          },
        ]),
      );
    });
  }

  /** The stale claims among these nodes' (node → the id that left it); RolloutOverlapError if any is live. */
  async #staleOrRefuse(
    id: string,
    nodes: readonly string[],
    stateOf: HolderState,
  ): Promise<Map<string, string>> {
    const claims = await this.of(nodes);
    const byHolder = new Map<string, { count: number; oldest: string; some: string[] }>();
    for (const [node, claim] of claims) {
      if (claim.rollout === id) continue;
      const seen = byHolder.get(claim.rollout) ?? { count: 0, oldest: claim.claimedAt, some: [] };
      if (seen.some.length < namedNodes) seen.some.push(node);
      byHolder.set(claim.rollout, {
        count: seen.count + 1,
        oldest: seen.oldest < claim.claimedAt ? seen.oldest : claim.claimedAt,
        some: seen.some,
      });
    }
    const live: Array<{ holder: string; count: number; state: string; some: string[] }> = [];
    for (const [holder, { count, oldest, some }] of byHolder) {
      const state = await stateOf(holder);
      if (state === undefined && Date.parse(this.#now()) - Date.parse(oldest) < unrecordedStaleMs)
        live.push({ holder, count, state: 'starting', some });
      else if (state !== undefined && holdsNodes(state)) live.push({ holder, count, state, some });
    }
    if (live.length > 0) {
      const [most] = live.sort((a, b) => b.count - a.count);
      if (most) throw new RolloutOverlapError(most.holder, most.count, most.state, most.some);
    }
    const stale = new Map<string, string>();
    for (const [node, claim] of claims) if (claim.rollout !== id) stale.set(node, claim.rollout);
    return stale;
  }
}
