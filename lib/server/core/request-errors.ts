import { ErrorTable, refused } from './error-table.ts';

/**
 * What is wrong with a request itself, before any area reads it: its body, its JSON, its fields,
 * its cursor. Every edge answers these the same way (lib/server/api/http-edge.ts joins this table
 * to every area's), and nothing has been read or written when one is thrown.
 */

/** A field, a path parameter or a query parameter that does not read; `problems` names each. */
export class InvalidRequestError extends Error {
  override name = 'InvalidRequestError';
  readonly problems: readonly string[];
  constructor(message: string, problems: readonly string[] = []) {
    super(message);
    this.problems = problems;
  }
}

/** A body larger than the route takes. */
export class BodyTooLargeError extends Error {
  override name = 'BodyTooLargeError';
  constructor(limit: number) {
    super(`the request body is larger than ${limit} bytes`);
  }
}

/** A body that is not JSON. */
export class MalformedJsonError extends Error {
  override name = 'MalformedJsonError';
  constructor() {
    super('the request body is not valid JSON');
  }
}

/** A cursor this API did not give, or gave for another answer. */
export class BadCursorError extends Error {
  override name = 'BadCursorError';
  constructor(message = 'the cursor is not one this API gave: start again without it') {
    super(message);
  }
}

export const requestErrors = new ErrorTable({
  InvalidRequestError: refused(InvalidRequestError, 400, 'invalid_request', {
    details: (error) => (error.problems.length > 0 ? error.problems : undefined),
  }),
  BodyTooLargeError: refused(BodyTooLargeError, 413, 'body_too_large'),
  MalformedJsonError: refused(MalformedJsonError, 400, 'malformed_json'),
  BadCursorError: refused(BadCursorError, 400, 'bad_cursor'),
});
