import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { StoreUnavailableError } from '../../core/unavailable.ts';
import type { TransactItem } from '../dynamodb/requests.ts';
import type { Batch } from './mesh-file-batch.ts';

/** A transaction's outcome: undefined when it held, else per item whether its condition failed. */
export type Commit = (
  items: readonly TransactItem[],
) => Promise<Array<{ readonly old: Record<string, unknown> | undefined } | undefined> | undefined>;

export type LaneOptions = {
  /** Transactions in flight at once. */
  readonly lanes: number;
  /** Epoch ms after which no transaction starts (once one has been committed). */
  readonly until: number;
  /** Keys that many transactions only check (a module's record), never write: shared across lanes. */
  readonly shared: (key: string) => boolean;
  /** The longest a transaction has taken so far in this apply (ms), kept across its phases. */
  readonly pace: { longest: number };
};

/** Attempts of a transaction cancelled by a conflict with another in flight (DynamoDB's TransactionConflict). */
const conflictAttempts = 6;

const conflicted = (error: unknown): boolean => {
  const cause = error instanceof StoreUnavailableError ? error.cause : error;
  return (
    cause instanceof TransactionCanceledException &&
    (cause.CancellationReasons ?? []).some((reason) => reason.Code === 'TransactionConflict')
  );
};

/**
 * Commits one phase's transactions, several at once: a transaction starts only when none in
 * flight writes an item it touches, so two never race for a count or a record (DynamoDB would
 * cancel one), and the order within a phase does not matter, since a phase's facts need only the
 * phases before it. Checks on shared keys (a module's record) may overlap; a conflict they cause
 * on DynamoDB is retried. The first failed condition stops the phase: the transactions in flight
 * finish, none starts, and it is reported. Answers false when time ran out first: no transaction
 * starts that would not end by `until` at the pace seen so far.
 */
export async function commitPhase(
  batches: readonly Batch[],
  commit: (batch: Batch) => Promise<void>,
  options: LaneOptions & { readonly committed: () => number },
): Promise<boolean> {
  const waiting = batches.map((batch) => ({
    batch,
    keys: batch.keys().filter((key) => !options.shared(key)),
  }));
  const busy = new Set<string>();
  const running = new Set<Promise<void>>();
  let failure: { error: unknown } | undefined;
  let outOfTime = false;
  const startable = () => waiting.findIndex(({ keys }) => !keys.some((key) => busy.has(key)));
  for (;;) {
    while (!failure && !outOfTime && running.size < options.lanes && waiting.length > 0) {
      const at = startable();
      if (at < 0) break;
      // A transaction started now must end by `until`, or the answer comes too late: those in
      // flight share the store, so each takes about as long as the longest seen.
      if (options.committed() > 0 && Date.now() + options.pace.longest > options.until) {
        outOfTime = true;
        break;
      }
      const [next] = waiting.splice(at, 1);
      if (!next) break;
      for (const key of next.keys) busy.add(key);
      const started = Date.now();
      const done: Promise<void> = retried(() => commit(next.batch))
        .then(() => {
          options.pace.longest = Math.max(options.pace.longest, Date.now() - started);
        })
        .catch((error: unknown) => {
          failure ??= { error };
        })
        .finally(() => {
          for (const key of next.keys) busy.delete(key);
          running.delete(done);
        });
      running.add(done);
    }
    if (running.size === 0) break;
    await Promise.race(running);
  }
  if (failure) throw failure.error;
  return waiting.length === 0;
}

async function retried(attempt: () => Promise<void>): Promise<void> {
  for (let tries = 1; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      if (!conflicted(error) || tries >= conflictAttempts) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 20 * 2 ** tries));
    }
  }
}
