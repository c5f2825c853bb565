import type { FunctionSpec } from './spec.ts';

/** The mesh area's functions. */
export const meshFunctions: readonly FunctionSpec[] = [];
