import { ErrorTable, tryAgain } from './error-table.ts';
import { isTransactionConflict, isTransientFault } from './faults.ts';

/**
 * A store (a table or a queue) could not be asked now. Never a lost write: the HTTP edge answers
 * it "try again" and the queue edge holds the message, each in one place. Every area throws this
 * one class, so neither edge needs to know which store was away.
 */
export class StoreUnavailableError extends Error {
  override name = 'StoreUnavailableError';
  /** What could not be done, in words: `recording a report`, `reading the inventory table`… */
  readonly what: string;
  constructor(what: string, options: { cause?: unknown } = {}) {
    super(`${what}: ${describeCause(options.cause)}`, options);
    this.what = what;
  }
}

/** Every area's store being away: every Task of the push flow waits it out before the flow fails. */
export const storeErrors = new ErrorTable({
  StoreUnavailableError: tryAgain(StoreUnavailableError, {
    says: 'the control plane cannot reach its store now',
    retriedByFlow: true,
  }),
});

/**
 * How often a request that lost a race with a transaction in flight is asked again, and the
 * longest pause before the last: many consumers sent at once mark one provider, many reports
 * touch one counter, and without a random pause the losers meet again at once.
 */
export const conflictRetries = { attempts: 10, firstPauseMs: 20, longestPauseMs: 1_000 } as const;

/**
 * Runs one request to a store; an answer of "not now" becomes StoreUnavailableError, anything
 * else passes. A request cancelled only by a transaction in flight on its items is asked again
 * after a pause drawn at random (full jitter, doubling), as AWS advises for `TransactionConflict`;
 * once the other transaction is done, a condition it made false fails as the race it is.
 */
export async function askStore<T>(what: string, request: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await request();
    } catch (error) {
      if (attempt < conflictRetries.attempts && isTransactionConflict(error)) {
        const ceiling = Math.min(conflictRetries.longestPauseMs, conflictRetries.firstPauseMs * 2 ** attempt);
        await new Promise((resolve) => setTimeout(resolve, Math.random() * ceiling));
        continue;
      }
      if (isTransientFault(error) && !(error instanceof StoreUnavailableError))
        throw new StoreUnavailableError(what, { cause: error });
      throw error;
    }
  }
}

/** `Name (message)` of an error, cut short: enough for a log line or a held message's reason. */
export function describeCause(cause: unknown): string {
  if (cause instanceof Error)
    return `${cause.name}${cause.message ? ` (${cause.message.slice(0, 200)})` : ''}`;
  return String(cause ?? 'unknown');
}
