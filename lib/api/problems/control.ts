import {
  BuildNotFoundError,
  BuildTimeOutOfBoundsError,
  RetractionContentionError,
  SequenceAheadError,
  UnknownNodeError,
} from '../../core/control/errors.ts';
import { Problem, tryAgainProblem } from '../problem.ts';

/** The control area's one mapping from domain errors to HTTP answers. */
export function controlProblem(error: unknown): Problem | undefined {
  if (error instanceof SequenceAheadError)
    return new Problem(422, 'sequence_ahead', error.message, {
      cause: error,
      details: { sequence: error.sequence, latestAccepted: error.latestAccepted },
    });
  if (error instanceof BuildTimeOutOfBoundsError)
    return new Problem(422, 'finished_at_out_of_bounds', error.message, {
      cause: error,
      details: { earliest: error.earliest, latest: error.latest },
    });
  if (error instanceof UnknownNodeError)
    return new Problem(404, 'node_not_found', error.message, { cause: error });
  if (error instanceof BuildNotFoundError)
    return new Problem(404, 'build_not_found', error.message, { cause: error });
  if (error instanceof RetractionContentionError)
    return tryAgainProblem(error.message, { retryAfterSeconds: 1, cause: error });
  return undefined;
}
