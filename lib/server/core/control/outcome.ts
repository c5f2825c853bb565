import { isTransientFault } from '../faults.ts';
import { StoreUnavailableError } from '../unavailable.ts';
import { MessageRejectedError, PushFailedError, StaleReportError } from './errors.ts';

/**
 * The one place where what happened to a message becomes what happens to it on the queue.
 * - ack: done (recorded, a repeat, superseded); it is deleted
 * - hold: the store could not take it; hidden for a while, tried again, lost past the bound
 * - deadLetter: it can never be taken (rejected); to the dead-letter queue at once
 * A message that cannot be read at all is dead-lettered as malformed before it is settled.
 */
export type Outcome =
  | { readonly kind: 'ack'; readonly note: string }
  | { readonly kind: 'hold'; readonly reason: string }
  | { readonly kind: 'deadLetter'; readonly dead: 'rejected'; readonly reason: string };

export function outcomeOfError(error: unknown): Outcome {
  if (error instanceof StaleReportError) return { kind: 'ack', note: `superseded: ${error.message}` };
  if (error instanceof PushFailedError) return { kind: 'ack', note: error.message };
  if (error instanceof MessageRejectedError)
    return { kind: 'deadLetter', dead: 'rejected', reason: `rejected: ${error.message}` };
  if (error instanceof StoreUnavailableError) return { kind: 'hold', reason: error.message };
  if (isTransientFault(error)) return { kind: 'hold', reason: `store unavailable: ${(error as Error).name}` };
  // Anything else is held too: losing a write on an error nobody foresaw is worse than holding
  // it for the bound and letting it go with a line saying why.
  return { kind: 'hold', reason: `unexpected: ${(error as Error)?.name ?? String(error)}` };
}
