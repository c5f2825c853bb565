import { hostIdentityErrors } from '../core/host-identity/errors.ts';
import { problemsFrom } from './problem.ts';

/** The host identity answers, from its table (lib/server/core/host-identity/errors.ts): 401 unproven, 403 another node's. */
export const hostIdentityProblem = problemsFrom(hostIdentityErrors);
