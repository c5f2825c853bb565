import { describeCause } from '../unavailable.ts';

/**
 * The control area's one error tree. Whatever goes wrong while a message is settled ends up as
 * one of these (or the core's StoreUnavailableError), and lib/core/control/outcome.ts turns each
 * into a queue outcome (acknowledge, hold, dead-letter) in one place.
 */
export class ControlError extends Error {
  override name = 'ControlError';
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

/** The push after an upgrade failed or timed out; logged, never a reason to hold the upgrade. */
export class PushFailedError extends ControlError {
  override name = 'PushFailedError';
  constructor(module: string, options: { cause?: unknown } = {}) {
    super(`push after upgrading ${module} failed: ${describeCause(options.cause)}`, options);
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
