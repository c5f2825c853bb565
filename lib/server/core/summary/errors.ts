import { ErrorTable, internal } from '../error-table.ts';

/** The summary area's one error tree: the stream aggregator and its counters. */
export class SummaryError extends Error {
  override name = 'SummaryError';
}

/**
 * The shard's watermark moved while a batch was applied: another invocation applied the same
 * shard (a retry overlapping the one it retries). The batch fails and is delivered again; its
 * changes already counted are then skipped.
 */
export class WatermarkMovedError extends SummaryError {
  override name = 'WatermarkMovedError';
}

/** None reaches a client: the aggregator's batch fails and the event source delivers it again. */
export const summaryErrors = new ErrorTable({
  SummaryError: internal(SummaryError),
  WatermarkMovedError: internal(WatermarkMovedError),
});
