/**
 * The mesh as a file (docs/mesh-file.md): read and check it, expand it, plan it against the live
 * mesh, export the live mesh as one, and select nodes by label. Pure: the API route, the stores'
 * bulk writes and the CLI bring the text, the live mesh and the writes.
 */

export type { Labels, Requirement, Selector } from '../mesh/labels.ts';
export { BadSelectorError, matchesSelector, parseSelector, selectorText } from '../mesh/labels.ts';
export { applyInMemory } from './apply-in-memory.ts';
export { exportMeshFile } from './export.ts';
export { checkTests, globMatcher, hasLabels } from './file-tests.ts';
export type { DesiredMesh, LiveMesh, LiveNode, MeshAssignment, MeshFileLimits, MeshNode } from './mesh.ts';
export { defaultLimits, liveKinds } from './mesh.ts';
export type { MeshMoved, MovedList } from './moved.ts';
export { movedText, whatMoved } from './moved.ts';
export type { ApplyPlan, ModuleChange, PlanOptions, RelationChange } from './plan.ts';
export { planApply, planMatches } from './plan.ts';
export type { MassRemoval } from './plan-checks.ts';
export {
  assertApplicable,
  assertCurrent,
  MassRemovalError,
  massRemovalShare,
  PlanChangedError,
  StalePlanError,
} from './plan-checks.ts';
export type { MeshFileProblem, ProblemCode } from './problems.ts';
export { BadMeshFileError, formatProblems, problemCodes } from './problems.ts';
export type { CheckedMeshFile, ReadMeshFileOptions } from './read.ts';
export { checkMeshFile, defaultMaxNodes, maxProblems, meshFileMaxBytes, readMeshFile } from './read.ts';
export type { FileTest, MeshFile } from './schema.ts';
export { meshFileJsonSchema, meshFileSchema } from './schema.ts';
export type { MeshFileFormat } from './source.ts';
export { formatOf } from './source.ts';
