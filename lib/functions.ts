import { controlFunctions } from './functions/control.ts';
import { enrolmentFunctions } from './functions/enrolment.ts';
import { meshFunctions } from './functions/mesh.ts';
import type { FunctionSpec } from './functions/spec.ts';

export type { Access, FunctionSpec } from './functions/spec.ts';

/** Every Lambda function of Mesh: the CDK builds one function and one role per entry. */
export const functionSpecs: readonly FunctionSpec[] = [
  { name: 'health', purpose: 'answers GET /health', access: [], trigger: 'api' },
  ...meshFunctions,
  ...enrolmentFunctions,
  ...controlFunctions,
];
