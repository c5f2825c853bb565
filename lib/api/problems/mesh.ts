import {
  AlreadyAssignedError,
  DuplicateRelationError,
  HasDependentsError,
  LimitReachedError,
  MeshRaceError,
  ModuleNotAssignedError,
  NodeExistsError,
  NodeNotFoundError,
  NotAProviderError,
  ProviderKindConflictError,
  ProvisionNotMintedError,
  PushContentionError,
  PushFlowFailedError,
  PushFlowUnavailableError,
  RelationNotFoundError,
  RemovalTooLargeError,
  SelfConsumptionError,
} from '../../core/mesh/errors.ts';
import { storeUnavailableError, transientTaskErrors } from '../../flow/push-definition.ts';
import { Problem, tryAgainProblem } from '../problem.ts';

/** The mesh area's one mapping from domain errors to HTTP answers. */
export function meshProblem(error: unknown): Problem | undefined {
  if (error instanceof PushFlowFailedError) return mapFlowFailure(error);
  const problem = (status: number, code: string) =>
    new Problem(status, code, (error as Error).message, { cause: error });
  if (error instanceof NodeNotFoundError) return problem(404, 'node_not_found');
  if (error instanceof ModuleNotAssignedError) return problem(404, 'module_not_assigned');
  if (error instanceof RelationNotFoundError) return problem(404, 'relation_not_found');
  if (error instanceof HasDependentsError)
    return new Problem(409, 'has_dependents', error.message, { cause: error, details: error.dependents });
  if (error instanceof ProvisionNotMintedError) return problem(409, 'not_minted');
  if (error instanceof RemovalTooLargeError) return problem(422, 'removal_too_large');
  if (error instanceof LimitReachedError)
    return new Problem(422, 'limit_reached', error.message, {
      cause: error,
      details: { node: error.node, limit: error.limit, max: error.max },
    });
  if (error instanceof NodeExistsError) return problem(409, 'node_exists');
  if (error instanceof AlreadyAssignedError) return problem(409, 'already_assigned');
  if (error instanceof DuplicateRelationError) return problem(409, 'duplicate_relation');
  if (error instanceof ProviderKindConflictError) return problem(409, 'provider_kind_conflict');
  if (error instanceof NotAProviderError) return problem(422, 'not_a_provider');
  if (error instanceof SelfConsumptionError) return problem(422, 'self_consumption');
  // Contention is "not now", not "no": nothing was half-done and the same request can succeed.
  if (error instanceof MeshRaceError || error instanceof PushContentionError) return contention(error);
  if (error instanceof PushFlowUnavailableError) {
    return tryAgainProblem('the push flow could not be started', { cause: error });
  }
  return undefined;
}

const contention = (error: Error) => tryAgainProblem(error.message, { retryAfterSeconds: 1, cause: error });

/**
 * A flow's failure arrives as the name of what a Task threw (its class does not cross Step
 * Functions), so the same errors are mapped by name; anything else stays a 500.
 */
function mapFlowFailure(error: PushFlowFailedError): Problem | undefined {
  switch (error.error) {
    case 'NodeNotFoundError':
      return new Problem(404, 'node_not_found', error.message, { cause: error });
    case 'PushContentionError':
    case 'MeshRaceError':
      return contention(error);
    case storeUnavailableError:
      return tryAgainProblem('the control plane cannot reach its store now', { cause: error });
    case 'PushFlowUnavailableError':
      return tryAgainProblem('the push flow could not be started', { cause: error });
    default:
      return transientTaskErrors.includes(error.error)
        ? tryAgainProblem('the push flow could not run its steps', { cause: error })
        : undefined;
  }
}
