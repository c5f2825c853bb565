import type { FunctionSpec } from './spec.ts';

/** The enrolment area's functions. */
export const enrolmentFunctions: readonly FunctionSpec[] = [];
