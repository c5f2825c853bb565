import type { FunctionSpec } from './spec.ts';

/** The control area's functions. */
export const controlFunctions: readonly FunctionSpec[] = [];
