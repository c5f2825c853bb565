import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { logger } from '../observability.ts';
import { json } from './http.ts';
import { internalProblem, Problem, type ProblemBody } from './problem.ts';

export type HttpEdgeOptions = {
  /** Turns this handler's domain errors into Problems; whatever it leaves undefined is a 500. */
  readonly mapError?: (error: unknown) => Problem | undefined;
};

/**
 * The one edge where errors become HTTP responses: a Problem is shown as it is, a mapped domain
 * error likewise, and anything else is logged and answered with a message that leaks nothing.
 */
export function httpEdge(
  options: HttpEdgeOptions = {},
): MiddlewareObj<APIGatewayProxyEvent, APIGatewayProxyResult> {
  return {
    onError: async function answerWithProblem(request) {
      const problem = toProblem(request.error, options.mapError);
      // "Try again" is an answer, not a failure: a store outage should not flood the error log.
      if (problem.status === 503)
        logger.warn(`answered try again: ${problem.message}`, { code: problem.code });
      else if (problem.status >= 500) logger.error('request failed', { error: request.error as Error });
      const body: ProblemBody = {
        error: {
          code: problem.code,
          message: problem.message,
          ...(problem.details !== undefined ? { details: problem.details } : {}),
        },
      };
      request.response = json(problem.status, body, { ...problem.headers });
    },
  };
}

function toProblem(error: unknown, mapError: HttpEdgeOptions['mapError']): Problem {
  if (error instanceof Problem) return error;
  const mapped = mapError?.(error);
  return mapped ?? internalProblem();
}
