import type { Actor } from '../audit/record.ts';
import type { Change } from './stream.ts';
import type { Summary } from './summary.ts';

/** What one batch of a shard did to the counters. */
export type Applied = {
  /** Changes after the shard's watermark, whose deltas are in the counters now. */
  readonly applied: number;
  /** Changes at or before the watermark: delivered again, already counted. */
  readonly skipped: number;
  /** Transactions written (one per run of changes; none when nothing moved). */
  readonly writes: number;
  /** Changes whose run the store refused for good: counted as lost, the summary no longer exact. */
  readonly lost: number;
  /** Why the store refused what was lost. */
  readonly reason?: string;
};

/** The counters the stream aggregator keeps (lib/server/adapters/summary/summary-store.ts). */
export interface SummaryCounters {
  /** Applies one shard's changes, in order, once: a change at or before the shard's watermark is skipped. */
  apply(shard: string, changes: readonly Change[]): Promise<Applied>;
}

export interface SummaryReader {
  summary(): Promise<Summary>;
}

/** Counts again from a full read, paged; for recovery after a loss (docs/summary.md). */
export interface SummaryRebuild {
  /** `by`: who asked, for the rebuild's audit record. */
  rebuild(by: Actor): Promise<Summary>;
}

/** All three, as one store keeps them (the wiring's `summary`; docs/decisions/summary-from-the-stream.md). */
export type SummaryStore = SummaryCounters & SummaryReader & SummaryRebuild;
