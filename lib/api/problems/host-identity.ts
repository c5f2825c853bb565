import { HostIdentityError, WrongNodeError } from '../../core/host-identity/errors.ts';
import { proofScheme } from '../../core/host-identity/proof.ts';
import { Problem } from '../problem.ts';

/**
 * The one mapping of host identity errors to HTTP answers: 401 when the proof does not show who
 * sent the request (with `WWW-Authenticate` naming why), 403 when it does but that node may not
 * act on this route.
 */
export function hostIdentityProblem(error: unknown): Problem | undefined {
  if (error instanceof WrongNodeError) return new Problem(403, error.code, error.message, { cause: error });
  if (error instanceof HostIdentityError) {
    return new Problem(401, error.code, error.message, {
      cause: error,
      headers: { 'www-authenticate': `${proofScheme} error="${error.code}"` },
    });
  }
  return undefined;
}
