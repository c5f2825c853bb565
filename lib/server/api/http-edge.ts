import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import type { RefusalLog } from '../core/audit/ports.ts';
import { logLine, say } from '../core/coded-lines.ts';
import type { ProblemBody } from '../core/error-table.ts';
import type { Log } from '../core/ports.ts';
import { requestErrors } from '../core/request-errors.ts';
import { storeErrors } from '../core/unavailable.ts';
import { powertoolsLog } from '../setup/observability.ts';
import { actorOf } from './caller.ts';
import { json } from './http.ts';
import { edgeLines } from './log-lines.ts';
import { internalProblem, Problem, problemsFrom } from './problem.ts';

export type HttpEdgeOptions = {
  /** Turns this area's domain errors into Problems (lib/api/problems/); what it leaves undefined is a 500. */
  readonly mapError?: (error: unknown) => Problem | undefined;
  /** @default a Powertools logger at INFO; the wiring passes the configured one */
  readonly log?: Log | undefined;
  /** Where refused requests (4xx) are counted (docs/audit.md); none when absent. */
  readonly refusals?: RefusalLog | undefined;
};

/** What a handler's deps may carry for its edge: where its refusals are counted. */
export type Refusing = { readonly refusals?: RefusalLog };

let fallbackLog: Log | undefined;
const defaultLog = (): Log => {
  fallbackLog ??= powertoolsLog('INFO');
  return fallbackLog;
};

/**
 * The one edge where errors become HTTP responses: a Problem is shown as it is, a store that
 * cannot be asked now is "try again", a mapped domain error is its Problem, and anything else is
 * logged and answered with a message that leaks nothing.
 */
export function httpEdge(
  options: HttpEdgeOptions = {},
): MiddlewareObj<APIGatewayProxyEvent, APIGatewayProxyResult> {
  return {
    onError: async function answerWithProblem(request) {
      const problem = toProblem(request.error, options.mapError);
      const log = options.log ?? defaultLog();
      // "Try again" is an answer, not a failure: a store outage should not flood the error log.
      if (problem.status === 503) {
        logLine(log, say(edgeLines.tryAgain, { problem: problem.code, reason: problem.message }));
      } else if (problem.status >= 500) {
        logLine(log, say(edgeLines.failed, {}), { error: request.error as Error });
      }
      const body: ProblemBody = {
        error: {
          code: problem.code,
          message: problem.message,
          ...(problem.details !== undefined ? { details: problem.details } : {}),
        },
      };
      request.response = json(problem.status, body, { ...problem.headers });
      if (problem.status >= 400 && problem.status < 500 && options.refusals)
        await options.refusals.note({
          by: actorOf(request.event),
          route: `${request.event.httpMethod} ${request.event.resource ?? request.event.path}`,
          status: problem.status,
          code: problem.code,
        });
    },
  };
}

/** What every route answers alike, whichever area it is: a store away, a request that does not read. */
const everyRouteProblem = problemsFrom(storeErrors, requestErrors);

function toProblem(error: unknown, mapError: HttpEdgeOptions['mapError']): Problem {
  if (error instanceof Problem) return error;
  return everyRouteProblem(error) ?? mapError?.(error) ?? internalProblem();
}
