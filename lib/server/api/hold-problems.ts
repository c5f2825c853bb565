import { holdErrors } from '../core/hold/errors.ts';
import { storeErrors } from '../core/unavailable.ts';
import { problemsFrom } from './problem.ts';

/** The hold area's answers (freezes), from its table (lib/server/core/hold/errors.ts; docs/http-api.md lists them). */
export const holdProblem = problemsFrom(holdErrors, storeErrors);
