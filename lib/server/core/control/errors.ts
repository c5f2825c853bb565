import { ErrorTable, internal, refused, tryAgain } from '../error-table.ts';
import { describeCause } from '../unavailable.ts';

/**
 * The control area's one error tree. Whatever goes wrong while a message is settled ends up as
 * one of these (or the core's StoreUnavailableError), and lib/server/core/control/outcome.ts turns each
 * into a queue outcome (acknowledge, hold, dead-letter) in one place. The table at the end says
 * how the operator's and hosts' routes answer each (lib/server/core/error-table.ts).
 */
export class ControlError extends Error {
  override name = 'ControlError';
}

/** A host's report for a node other than its own: a host speaks only for itself. */
export class ReportForAnotherNodeError extends ControlError {
  override name = 'ReportForAnotherNodeError';
  constructor(node: string) {
    super(`this host may only report for itself, not ${node}`);
  }
}

/** A report older than (or the same as) the one recorded: the node has moved on. */
export class StaleReportError extends ControlError {
  override name = 'StaleReportError';
  readonly recordedSequence: number;
  constructor(node: string, sequence: number, recordedSequence: number) {
    super(`report ${sequence} for ${node} is not newer than the recorded ${recordedSequence}`);
    this.recordedSequence = recordedSequence;
  }
}

/** The message is well-formed but the mesh refuses it for good (an unknown module, say). */
export class MessageRejectedError extends ControlError {
  override name = 'MessageRejectedError';
  constructor(reason: string, options: { cause?: unknown } = {}) {
    super(reason, options);
  }
}

/**
 * A report whose sequence is further ahead of the control plane's clock than a host's clock may
 * be: recorded, it would make every real report of its node stale until the clock caught up.
 */
export class SequenceAheadError extends MessageRejectedError {
  override name = 'SequenceAheadError';
  readonly sequence: number;
  readonly latestAccepted: number;
  constructor(
    node: string,
    sequence: number,
    bound: { readonly latestAccepted: number; readonly leadMs: number },
  ) {
    super(
      `report ${sequence} for ${node} is ahead of the clock: a sequence counts the host's clock in milliseconds and may lead the control plane's by ${bound.leadMs / 60_000} minutes at most (up to ${bound.latestAccepted} now)`,
    );
    this.sequence = sequence;
    this.latestAccepted = bound.latestAccepted;
  }
}

/** A node the mesh does not hold (never added, or removed since). */
export class UnknownNodeError extends MessageRejectedError {
  override name = 'UnknownNodeError';
  constructor(node: string) {
    super(`there is no node ${node}`);
  }
}

/** A report queued before its node was added: it is about an earlier node of the same name, removed since. */
export class ReportBeforeNodeError extends MessageRejectedError {
  override name = 'ReportBeforeNodeError';
  constructor(node: string, queuedAt: string, createdAt: string) {
    super(
      `the report for ${node} was queued at ${queuedAt}, before node ${node} was added (${createdAt}): it is about a node of that name removed since`,
    );
  }
}

/** A report naming a revision its node was never sent. */
export class RevisionNotSentError extends MessageRejectedError {
  override name = 'RevisionNotSentError';
  constructor(node: string, revision: number, sentRevision: number | undefined) {
    super(
      sentRevision === undefined
        ? `${node} was sent nothing yet, so it cannot report revision ${revision}`
        : `${node} was sent revision ${sentRevision} at most, so it cannot report revision ${revision}`,
    );
  }
}

/** A build whose finishedAt is further from when it was received than a build's clock may be. */
export class BuildTimeOutOfBoundsError extends MessageRejectedError {
  override name = 'BuildTimeOutOfBoundsError';
  readonly earliest: string;
  readonly latest: string;
  constructor(reason: string, bounds: { readonly earliest: string; readonly latest: string }) {
    super(reason);
    this.earliest = bounds.earliest;
    this.latest = bounds.latest;
  }
}

/** Retracting a version of which no successful build was recorded. */
export class BuildNotFoundError extends ControlError {
  override name = 'BuildNotFoundError';
  constructor(module: string, version: string) {
    super(`no successful build of ${module} ${version} was recorded`);
  }
}

/** A retraction that kept losing its race with new builds of the module; asked again, it completes. */
export class RetractionContentionError extends ControlError {
  override name = 'RetractionContentionError';
  constructor(module: string, version: string) {
    super(`builds of ${module} kept changing its latest while ${version} was retracted`);
  }
}

/** The push after an upgrade failed or timed out; logged, never a reason to hold the upgrade. */
export class PushFailedError extends ControlError {
  override name = 'PushFailedError';
  /** `what` is what asked the push: an upgrade's module, or `enrolment of NODE`. */
  constructor(what: string, options: { cause?: unknown } = {}) {
    super(
      `push after ${what.startsWith('enrolment of ') ? what : `upgrading ${what}`} failed: ${describeCause(options.cause)}`,
      options,
    );
  }
}

/** The push flow did not answer in time. */
export class PushTimeoutError extends ControlError {
  override name = 'PushTimeoutError';
}

/** The message is held: the store could not take it; it comes back after its wait. */
export class MessageHeldError extends ControlError {
  override name = 'MessageHeldError';
}

/** An earlier message of the same subject is held, so this one goes back too, in order. */
export class HeldBehindError extends ControlError {
  override name = 'HeldBehindError';
}

/** On the queue every one of these is settled (lib/server/core/control/outcome.ts); a few also answer a route. */
export const controlErrors = new ErrorTable({
  ControlError: internal(ControlError),
  StaleReportError: internal(StaleReportError),
  ReportForAnotherNodeError: refused(ReportForAnotherNodeError, 403, 'wrong_node'),
  MessageRejectedError: internal(MessageRejectedError),
  SequenceAheadError: refused(SequenceAheadError, 422, 'sequence_ahead', {
    details: (e) => ({ sequence: e.sequence, latestAccepted: e.latestAccepted }),
  }),
  UnknownNodeError: refused(UnknownNodeError, 404, 'node_not_found'),
  ReportBeforeNodeError: internal(ReportBeforeNodeError),
  RevisionNotSentError: internal(RevisionNotSentError),
  BuildTimeOutOfBoundsError: refused(BuildTimeOutOfBoundsError, 422, 'finished_at_out_of_bounds', {
    details: (e) => ({ earliest: e.earliest, latest: e.latest }),
  }),
  BuildNotFoundError: refused(BuildNotFoundError, 404, 'build_not_found'),
  RetractionContentionError: tryAgain(RetractionContentionError, { retryAfterSeconds: 1 }),
  PushFailedError: internal(PushFailedError),
  PushTimeoutError: internal(PushTimeoutError),
  MessageHeldError: internal(MessageHeldError),
  HeldBehindError: internal(HeldBehindError),
});
