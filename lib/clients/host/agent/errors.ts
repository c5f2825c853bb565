/** Errors of the host agent's run loop. */
export class HostAgentError extends Error {
  override name = 'HostAgentError';
}

/** The control plane could not be reached or asked us to come back later: wait and retry. */
export class ControlPlaneUnavailableError extends HostAgentError {
  override name = 'ControlPlaneUnavailableError';
  readonly retryAfterSeconds: number | undefined;
  constructor(message: string, retryAfterSeconds?: number, options?: { cause?: unknown }) {
    super(message, options);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** The control plane refused this node's credential (not enrolled, or a different key). */
export class CredentialRefusedError extends HostAgentError {
  override name = 'CredentialRefusedError';
  /** The problem's code: `not_enrolled` when the control plane holds no enrolment for this key. */
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

/**
 * The control plane refused a report whose sequence leads its clock by more than it takes (422
 * `sequence_ahead`): the sequence this host keeps grew from a clock that ran ahead.
 */
export class SequenceAheadRefusedError extends HostAgentError {
  override name = 'SequenceAheadRefusedError';
  /** The largest sequence the control plane takes now. */
  readonly latestAccepted: number;
  constructor(message: string, latestAccepted: number) {
    super(message);
    this.latestAccepted = latestAccepted;
  }
}
