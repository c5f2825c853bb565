import { enrolmentErrors } from '../core/enrolment/errors.ts';
import { problemsFrom } from './problem.ts';

/** The enrolment area's answers, from its table (lib/server/core/enrolment/errors.ts; docs/http-api.md lists them). */
export const enrolmentProblem = problemsFrom(enrolmentErrors);
