import type { BuildBody, ControlMessage, ReportBody } from './messages.ts';

/**
 * What the control core needs from the world. Adapters (lib/adapters/dynamodb/report-store.ts,
 * build-store.ts, lib/adapters/sqs/*) implement these; tests use typed in-memory ones.
 * The mesh's ModuleVersions and PushFlow, and the Log, come from lib/core/ports.ts.
 */

/** A node's kept report: a heartbeat moves only sequence and times; the applied revision is the last `applied`. */
export type RecordedReport = ReportBody & {
  readonly heardAt: string;
  readonly appliedRevision?: number;
  readonly appliedAt?: string;
};

export interface ReportStore {
  /**
   * Records the report if it is newer than the one kept for its node. Throws StaleReportError
   * when it is not, StoreUnavailableError when the store cannot be reached.
   */
  recordReport(report: ReportBody, heardAt: string): Promise<void>;
}

export type RecordedBuild = BuildBody & { readonly recordedAt: string };

export interface BuildStore {
  /** Keeps the first result for a build id; a repeat changes nothing and says so. */
  recordBuild(build: BuildBody, recordedAt: string): Promise<'recorded' | 'repeat'>;
  /** Each module's latest successful build (by finishedAt, then id). */
  latestSuccessfulBuilds(): Promise<readonly RecordedBuild[]>;
}

export type Outgoing = {
  readonly message: ControlMessage;
  /** Set when a retry of the same work must not put the message on the queue twice. */
  readonly deduplicationId?: string;
};

export type Queued = { readonly subject: string; readonly messageId: string };

/** Puts control messages on the control queue, the subject as their group. */
export interface ControlSender {
  send(messages: readonly Outgoing[]): Promise<readonly Queued[]>;
}

/** A queue message as the consumer sees it, whatever delivered it (Lambda or the local loop). */
export type QueueRecord = {
  readonly messageId: string;
  /** What SQS needs to change this receipt's visibility. */
  readonly receiptHandle: string;
  readonly body: string;
  readonly groupId: string;
  readonly receiveCount: number;
  readonly firstReceivedAtMs: number;
};

export type DeadLetterKind = 'malformed' | 'lost' | 'rejected';

/** What the consumer does to the queue itself besides acknowledging: hold and dead-letter. */
export interface QueueSettlement {
  /** Hides the message for this long; it is not acknowledged, so it comes back then. */
  hold(record: QueueRecord, visibilitySeconds: number): Promise<void>;
  /** Puts a copy on the dead-letter queue with its reason; the caller then acknowledges it. */
  deadLetter(
    record: QueueRecord,
    letter: {
      readonly kind: DeadLetterKind;
      readonly reason: string;
      readonly type?: string;
      readonly subject?: string;
    },
  ): Promise<void>;
}
