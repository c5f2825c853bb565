import type { Actor } from '../audit/record.ts';
import type { DeadLetterDepth, DeadLetterNote } from './dead-letter-notes.ts';
import type { BuildBody, ControlMessage, ReportBody } from './messages.ts';

/**
 * What the control core needs from the world. Adapters (lib/server/adapters/control/report-store.ts,
 * build-store.ts, lib/adapters/sqs/*) implement these; tests use typed in-memory ones.
 * The mesh's ModuleVersions and PushFlow, and the Log, come from lib/server/core/ports.ts.
 */

/** A node's kept report: a heartbeat moves only sequence and times; the applied revision is the last `applied`. */
export type RecordedReport = ReportBody & {
  readonly heardAt: string;
  readonly appliedRevision?: number;
  readonly appliedAt?: string;
};

export type ReportTimes = {
  /** When the consumer took it: the node was last heard then. */
  readonly heardAt: string;
  /** When the control plane put it on the queue (the envelope's sentAt), by its own clock. */
  readonly queuedAt: string;
};

export type ReportRecorded = { readonly turnedUnhealthy: boolean };

export interface ReportStore {
  /**
   * Records the report if its node exists and was added before the report was queued, the
   * revision it names was sent to the node (a heartbeat's revision 0 names none), and it is
   * newer than the one kept. Throws UnknownNodeError, ReportBeforeNodeError,
   * RevisionNotSentError or StaleReportError when not, StoreUnavailableError when the store
   * cannot be reached. A report with a revert is audited; `by` is who sent it (the host's key),
   * as the report route saw it. Answers whether this report turned the node unhealthy (its
   * health was not unhealthy before it), which is told as `node.unhealthy` (docs/events.md).
   */
  recordReport(report: ReportBody, times: ReportTimes, by?: Actor): Promise<ReportRecorded>;
  /**
   * Forgets the node's kept report, so its host's next report is recorded whatever its
   * sequence; answers the report forgotten (undefined when there was none). Throws
   * UnknownNodeError for a node the mesh does not hold.
   */
  resetReport(node: string, by: Actor): Promise<RecordedReport | undefined>;
}

export type RecordedBuild = BuildBody & {
  /** When the control plane received it, by its own clock: what orders a module's builds. */
  readonly receivedAt: string;
  readonly recordedAt: string;
};

export type BuildTimes = Pick<RecordedBuild, 'receivedAt' | 'recordedAt'>;

/** What became of a build result: kept for the first time, a repeat, or kept but of a retracted version. */
export type BuildRecording = 'recorded' | 'repeat' | 'retracted';

export type Retraction = {
  readonly module: string;
  readonly version: string;
  /** When the version was first retracted. */
  readonly retractedAt: string;
  /** Whether it was retracted before this request. */
  readonly already: boolean;
  /** The ids of the successful builds of that version. */
  readonly builds: readonly string[];
  /** The module's latest successful build now; null when none is left. */
  readonly latest: RecordedBuild | null;
};

export interface BuildStore {
  /**
   * Keeps the first result for a build id; a repeat changes nothing and says so. A successful
   * build becomes its module's latest when it was received after the latest, unless its
   * version is retracted.
   */
  recordBuild(build: BuildBody, times: BuildTimes, by: Actor): Promise<BuildRecording>;
  /** Each module's latest successful build (by receivedAt, then id), retracted versions left out. */
  latestSuccessfulBuilds(): Promise<readonly RecordedBuild[]>;
  /**
   * Retracts a version of a module for good: no build of it is the module's latest again, and
   * when it is the latest now, the build received before it becomes the latest. Throws
   * BuildNotFoundError when no successful build of that version was recorded.
   */
  retractBuild(module: string, version: string, retractedAt: string, by: Actor): Promise<Retraction>;
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

/** Where what the consumer let go or dead-lettered is noted (letters.ts), best effort. */
export interface DeadLetterLog {
  note(letter: DeadLetterNote): Promise<void>;
}

/** The console's dead-letter list. */
export interface DeadLetterReader {
  /** The newest first. */
  list(limit: number): Promise<DeadLetterNote[]>;
}

/** Counts the dead-letter queue without receiving from it. */
export interface DeadLetterCounter {
  depth(): Promise<DeadLetterDepth>;
}

/**
 * What a change of one node's enrolled keys asks of the mesh (docs/decisions/sealed-secrets.md),
 * before the push that delivers it. Undefined when the node does not exist.
 */
export interface SealingFollowUp {
  /**
   * Enrolled: marks the node (when it has relations or grants) and the consumers of its
   * providers, so each relation with the node on one side is minted to its key at their next
   * compose. Not enrolled: withdraws every provision and grant the node holds, both sides of
   * each, and marks the other sides (their relations wait until it enrols again). `marked` is
   * empty when the node has nothing sealed to it either way: there is nothing to push.
   */
  followKeys(
    node: string,
  ): Promise<
    { readonly enrolled: boolean; readonly marked: readonly string[]; readonly withdrawn: number } | undefined
  >;
}
