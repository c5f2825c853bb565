/**
 * What a client is told when a request does not succeed. Domain errors are turned into a
 * Problem at exactly one edge (lib/api/http-edge.ts, with each area's mapping in
 * lib/api/problems/); anything that is not a Problem becomes a generic 500 whose message never
 * reaches the client.
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

export type ProblemBody = {
  readonly error: { readonly code: string; readonly message: string; readonly details?: unknown };
};

export const internalProblem = () =>
  new Problem(500, 'internal', 'internal error; the control plane logged it');

/** How long a client is told to wait when a store cannot be asked now; the gateway's own 503 says the same. */
export const storeRetryAfterSeconds = 2;

/**
 * "Try again" is an answer, not a failure: a store, queue or flow that cannot be asked now, or a
 * race lost. Every area answers it the same way, with how long to wait.
 */
export const tryAgainProblem = (
  what: string,
  options: { retryAfterSeconds?: number; cause?: unknown } = {},
) =>
  new Problem(503, 'try_again', `${what}; try again`, {
    headers: { 'retry-after': String(options.retryAfterSeconds ?? storeRetryAfterSeconds) },
    cause: options.cause,
  });
