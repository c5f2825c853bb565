import { rolloutErrors } from '../../core/rollout/errors.ts';
import { storeErrors } from '../../core/unavailable.ts';
import { problemsFrom } from '../problem.ts';

/** The rollout area's answers, from its table (lib/core/rollout/errors.ts; docs/http-api.md lists them). */
export const rolloutProblem = problemsFrom(rolloutErrors, storeErrors);
