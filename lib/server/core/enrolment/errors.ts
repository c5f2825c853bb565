import { ErrorTable, internal, refused } from '../error-table.ts';
import type { TokenRecord } from './ports.ts';

/** The enrolment area's errors, and at the end their table (lib/server/core/error-table.ts): one row each. */
export class EnrolmentError extends Error {
  override name = 'EnrolmentError';
}

/** A token refused, saying which way: the host exits with this reason and does not retry. */
export class TokenRefusedError extends EnrolmentError {
  override name = 'TokenRefusedError';
  readonly reason: 'unknown' | 'expired' | 'revoked' | 'spent';
  constructor(reason: TokenRefusedError['reason'], message: string) {
    super(message);
    this.reason = reason;
  }
}

/** Another presenter holds a live claim on the token; ask again after `retryAfterSeconds`. */
export class TokenHeldError extends EnrolmentError {
  override name = 'TokenHeldError';
  readonly retryAfterSeconds: number;
  constructor(retryAfterSeconds: number) {
    super(`the token is claimed by another presenter; try again in ${retryAfterSeconds} s`);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/**
 * A conditional write on the token item failed; carries the item as it was (ALL_OLD), from
 * which the core decides what the presenter is told. Never shown as it is.
 */
export class TokenConditionFailedError extends EnrolmentError {
  override name = 'TokenConditionFailedError';
  readonly old: TokenRecord | undefined;
  constructor(step: string, old: TokenRecord | undefined, options: { cause?: unknown } = {}) {
    super(`the token's ${step} condition did not hold`, options);
    this.old = old;
  }
}

/** A token was asked for a node the mesh does not hold. */
export class NodeUnknownError extends EnrolmentError {
  override name = 'NodeUnknownError';
  readonly node: string;
  constructor(node: string, options: { cause?: unknown } = {}) {
    super(`there is no node ${node}; add it with mesh node add ${node}`, options);
    this.node = node;
  }
}

/** The node has no token to revoke. */
export class NoTokenError extends EnrolmentError {
  override name = 'NoTokenError';
  constructor(node: string) {
    super(`node ${node} has no token`);
  }
}

/** The token was already spent: revoking it would change nothing. */
export class TokenAlreadySpentError extends EnrolmentError {
  override name = 'TokenAlreadySpentError';
  constructor(node: string) {
    super(`node ${node}'s token is already spent; issue a new token to enrol the node again`);
  }
}

/** Two tokens were issued for one node at the same moment; the other one won. */
export class TokenIssueConflictError extends EnrolmentError {
  override name = 'TokenIssueConflictError';
  constructor(node: string, options: { cause?: unknown } = {}) {
    super(
      `another token for ${node} was issued at the same time; issue again if you need a new one`,
      options,
    );
  }
}

/**
 * A key rotation that cannot go ahead: the new key's possession proof does not hold, or the
 * node's enrolment is no longer the one the request was proven with (rotated or enrolled again
 * since, or revoked). The host keeps its keys; nothing was written that makes a key work.
 */
export class KeyRotationRefusedError extends EnrolmentError {
  override name = 'KeyRotationRefusedError';
  readonly reason: 'possession' | 'moved' | 'not_enrolled';
  constructor(reason: KeyRotationRefusedError['reason'], message: string, options: { cause?: unknown } = {}) {
    super(message, options);
    this.reason = reason;
  }
}

/** The enrolment switch's condition did not hold; carries the enrolment as it was (ALL_OLD). */
export class EnrolmentMovedError extends EnrolmentError {
  override name = 'EnrolmentMovedError';
  readonly current: { readonly thumbprint: string; readonly presenter: string } | undefined;
  constructor(current: EnrolmentMovedError['current']) {
    super('the enrolment is not the one the rotation started from');
    this.current = current;
  }
}

const tokenRefusals = { unknown: 404, expired: 410, revoked: 410, spent: 403 } as const;
const rotationRefusals = {
  possession: [400, 'possession_invalid'],
  moved: [409, 'enrolment_moved'],
  not_enrolled: [401, 'not_enrolled'],
} as const;

/**
 * Held is "try again" with the lease left (a normal race, not a fault, so not logged as one); a
 * refused token says which way; an operator's request names what it found; a key rotation says
 * why it cannot go ahead. docs/http-api.md lists the answers.
 */
export const enrolmentErrors = new ErrorTable({
  EnrolmentError: internal(EnrolmentError),
  TokenRefusedError: refused(
    TokenRefusedError,
    (e) => tokenRefusals[e.reason],
    (e) => `token_${e.reason}`,
  ),
  TokenHeldError: refused(TokenHeldError, 409, 'token_held', {
    retryAfterSeconds: (e) => e.retryAfterSeconds,
    details: (e) => ({ retryAfterSeconds: e.retryAfterSeconds }),
  }),
  // The core decides from the item it carries what the presenter is told.
  TokenConditionFailedError: internal(TokenConditionFailedError),
  NodeUnknownError: refused(NodeUnknownError, 404, 'node_unknown'),
  NoTokenError: refused(NoTokenError, 404, 'no_token'),
  TokenAlreadySpentError: refused(TokenAlreadySpentError, 409, 'token_spent'),
  TokenIssueConflictError: refused(TokenIssueConflictError, 409, 'token_conflict'),
  KeyRotationRefusedError: refused(
    KeyRotationRefusedError,
    (e) => rotationRefusals[e.reason][0],
    (e) => rotationRefusals[e.reason][1],
  ),
  // The rotation turns it into a KeyRotationRefusedError.
  EnrolmentMovedError: internal(EnrolmentMovedError),
});
