import {
  AlreadyAssignedError,
  DuplicateRelationError,
  MeshRaceError,
  MeshStoreUnavailableError,
  ModuleNotAssignedError,
  NodeExistsError,
  NodeNotFoundError,
  NotAProviderError,
  ProviderKindConflictError,
  PushContentionError,
  SelfConsumptionError,
} from '../../core/mesh/errors.ts';
import { Problem } from '../problem.ts';

/** The mesh area's one mapping from domain errors to HTTP answers. */
export function mapMeshError(error: unknown): Problem | undefined {
  const problem = (status: number, code: string, headers?: Record<string, string>) =>
    new Problem(status, code, (error as Error).message, { cause: error, ...(headers ? { headers } : {}) });
  if (error instanceof NodeNotFoundError) return problem(404, 'node_not_found');
  if (error instanceof ModuleNotAssignedError) return problem(404, 'module_not_assigned');
  if (error instanceof NodeExistsError) return problem(409, 'node_exists');
  if (error instanceof AlreadyAssignedError) return problem(409, 'already_assigned');
  if (error instanceof DuplicateRelationError) return problem(409, 'duplicate_relation');
  if (error instanceof ProviderKindConflictError) return problem(409, 'provider_kind_conflict');
  if (error instanceof NotAProviderError) return problem(422, 'not_a_provider');
  if (error instanceof SelfConsumptionError) return problem(422, 'self_consumption');
  if (error instanceof MeshRaceError || error instanceof PushContentionError) {
    return problem(409, 'contention', { 'retry-after': '1' });
  }
  if (error instanceof MeshStoreUnavailableError) {
    return new Problem(503, 'try_again', 'the mesh store could not be reached; try again', {
      headers: { 'retry-after': '2' },
      cause: error,
    });
  }
  return undefined;
}
