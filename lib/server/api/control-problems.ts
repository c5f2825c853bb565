import { controlErrors } from '../core/control/errors.ts';
import { problemsFrom } from './problem.ts';

/** The control area's answers, from its table (lib/server/core/control/errors.ts). */
export const controlProblem = problemsFrom(controlErrors);
