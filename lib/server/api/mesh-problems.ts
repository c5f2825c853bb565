import { meshErrors } from '../core/mesh/errors.ts';
import { storeErrors } from '../core/unavailable.ts';
import { problemsFrom } from './problem.ts';

/**
 * The mesh area's answers, from its table (lib/server/core/mesh/errors.ts). A push flow's failure
 * arrives as the name of what a Task threw, and is answered by that name's row: a store that
 * stayed away through the flow's retries is a store's "try again", as it is here.
 */
export const meshProblem = problemsFrom(meshErrors, storeErrors);
