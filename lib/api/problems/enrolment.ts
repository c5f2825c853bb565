import {
  KeyRotationRefusedError,
  NodeUnknownError,
  NoTokenError,
  TokenAlreadySpentError,
  TokenHeldError,
  TokenIssueConflictError,
  TokenRefusedError,
} from '../../core/enrolment/errors.ts';
import { Problem } from '../problem.ts';

/**
 * The one mapping of enrolment errors to HTTP answers (docs/http-api.md):
 * - "try again", with Retry-After: `token_held` 409 (lease left; a normal race, not a fault, so
 *   not logged as one); a store that cannot be asked is the edge's own `try_again` 503
 * - refusals: `token_unknown` 404, `token_expired` 410, `token_revoked` 410, `token_spent` 403
 * - operator: `node_unknown` 404, `no_token` 404, `token_spent` 409, `token_conflict` 409
 * - key rotation: `possession_invalid` 400, `enrolment_moved` 409, `not_enrolled` 401
 */
export function enrolmentProblem(error: unknown): Problem | undefined {
  if (error instanceof TokenHeldError) {
    return new Problem(409, 'token_held', error.message, {
      cause: error,
      headers: { 'retry-after': String(error.retryAfterSeconds) },
      details: { retryAfterSeconds: error.retryAfterSeconds },
    });
  }
  if (error instanceof TokenRefusedError) {
    const status = { unknown: 404, expired: 410, revoked: 410, spent: 403 }[error.reason];
    return new Problem(status, `token_${error.reason}`, error.message, { cause: error });
  }
  if (error instanceof NodeUnknownError)
    return new Problem(404, 'node_unknown', error.message, { cause: error });
  if (error instanceof NoTokenError) return new Problem(404, 'no_token', error.message, { cause: error });
  if (error instanceof TokenAlreadySpentError)
    return new Problem(409, 'token_spent', error.message, { cause: error });
  if (error instanceof TokenIssueConflictError)
    return new Problem(409, 'token_conflict', error.message, { cause: error });
  if (error instanceof KeyRotationRefusedError) {
    const [status, code] = (
      {
        possession: [400, 'possession_invalid'],
        moved: [409, 'enrolment_moved'],
        not_enrolled: [401, 'not_enrolled'],
      } as const
    )[error.reason];
    return new Problem(status, code, error.message, { cause: error });
  }
  return undefined;
}
