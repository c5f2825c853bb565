import { meshErrors } from '../core/mesh/errors.ts';
import { rolloutErrors } from '../core/rollout/errors.ts';
import { storeErrors } from '../core/unavailable.ts';
import { problemsFrom } from './problem.ts';

/**
 * The rollout area's answers, from its table (lib/server/core/rollout/errors.ts; docs/http-api.md lists
 * them), and the mesh's: a named node that does not exist is its 404.
 */
export const rolloutProblem = problemsFrom(rolloutErrors, meshErrors, storeErrors);
