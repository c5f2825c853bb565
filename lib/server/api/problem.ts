import { type ErrorRow, ErrorTable, notNowSeconds, rowValue } from '../core/error-table.ts';

/**
 * What a client is told when a request does not succeed. Domain errors are turned into a
 * Problem at exactly one edge (lib/server/api/http-edge.ts), each by its row in its area's table
 * (lib/server/core/error-table.ts); anything that is not a Problem becomes a generic 500 whose message
 * never reaches the client.
 */
export class Problem extends Error {
  override name = 'Problem';
  readonly status: number;
  readonly code: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly details: unknown;

  constructor(
    status: number,
    code: string,
    message: string,
    options: { headers?: Record<string, string>; details?: unknown; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.status = status;
    this.code = code;
    this.headers = options.headers ?? {};
    this.details = options.details;
  }
}

export const internalProblem = () =>
  new Problem(500, 'internal', 'internal error; the control plane logged it');

/** How long a client is told to wait when a store cannot be asked now; the gateway's own 503 says the same. */
export const storeRetryAfterSeconds = notNowSeconds;

/**
 * "Try again" is an answer, not a failure: a store, queue or flow that cannot be asked now, or a
 * race lost. Every area answers it the same way, with how long to wait.
 */
export const tryAgainProblem = (
  what: string,
  options: { retryAfterSeconds?: number | undefined; cause?: unknown } = {},
) =>
  new Problem(503, 'try_again', `${what}; try again`, {
    headers: { 'retry-after': String(options.retryAfterSeconds ?? storeRetryAfterSeconds) },
    cause: options.cause,
  });

/**
 * An area's answers, read from its tables: the row of the error's class, or, for an error that
 * relays another's name (a push flow's failure crosses Step Functions as the name of what a
 * Task threw), the row of that name, with the message that came across. What has no row, or a
 * row that is never answered, is left to the edge's 500.
 */
export function problemsFrom(...tables: readonly ErrorTable[]): (error: unknown) => Problem | undefined {
  const table = new ErrorTable({}, ...tables);
  return function problemOf(error: unknown): Problem | undefined {
    const row = table.rowOf(error);
    if (!row) return undefined;
    const relayed = row.relays?.(error as Error);
    if (relayed !== undefined) return answer(table.named(relayed), undefined, error as Error);
    const wrapping = row.answeredAsCause?.(error as Error);
    if (wrapping) return answerAsCause(problemOf((error as Error).cause), wrapping, error as Error);
    return answer(row, error as Error, error as Error);
  };
}

/** The cause's answer with what the wrapping error adds; a cause answered as a defect is a 500 that still says it. */
function answerAsCause(
  cause: Problem | undefined,
  { adds, details, failed }: NonNullable<ReturnType<NonNullable<ErrorRow['answeredAsCause']>>>,
  error: Error,
): Problem {
  if (!cause || cause.status >= 500)
    return new Problem(500, 'internal', `${failed} ${adds}`, { cause: error, details });
  return new Problem(cause.status, cause.code, `${cause.message}; ${adds}`, {
    cause: error,
    headers: { ...cause.headers },
    details: { ...(cause.details as Record<string, unknown> | undefined), ...details },
  });
}

/** The row's answer; `instance` is the error the row is about, absent when only its name came across. */
function answer(row: ErrorRow | undefined, instance: Error | undefined, error: Error): Problem | undefined {
  if (!row) return undefined;
  const status = rowValue(row.status, instance);
  const code = rowValue(row.code, instance);
  const retryAfterSeconds = rowValue(row.retryAfterSeconds, instance);
  if (status === undefined || code === undefined) return undefined;
  if (status >= 500 && row.retryAfterSeconds === undefined) return undefined;
  const message = row.says ?? error.message;
  if (code === 'try_again') return tryAgainProblem(message, { retryAfterSeconds, cause: error });
  return new Problem(status, code, message, {
    cause: error,
    headers: {
      ...(retryAfterSeconds !== undefined ? { 'retry-after': String(retryAfterSeconds) } : {}),
      ...(instance && row.headers?.(instance)),
    },
    details: instance && row.details ? row.details(instance) : undefined,
  });
}
