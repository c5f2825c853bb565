/**
 * Each area keeps one table of its errors beside their classes (its errors.ts): one row per
 * class, saying everything any edge needs to know about it. The HTTP answer (lib/server/api/problem.ts
 * builds it), the answer to a push flow's failure that arrives as a name, the message a push's
 * record keeps, the exit of `mesh push --follow` and the Retry lists of the push flow all read
 * the rows, so a new error is its class and its row, nothing else. test/unit/error-tables.test.ts
 * fails for an error class without one.
 */
export type ErrorClass<E extends Error = Error> = abstract new (...args: never[]) => E;

/** A value of the row, or how to read it from the error (for a class whose answer depends on it). */
type Of<E, T> = T | ((error: E) => T);

export type ErrorRow<E extends Error = Error> = {
  /** The class answered; absent for a failure that only ever arrives by name (a Lambda fault). */
  readonly error?: ErrorClass<E> | undefined;
  /** The HTTP status; 500 for an error no client is told about (at an edge it is a defect, logged). */
  readonly status: Of<E, number>;
  /** The stable code of the answer. */
  readonly code: Of<E, string>;
  /**
   * Whether the operator is told its message: in the answer, and in the record of a push it
   * failed (shown by `mesh push --follow`). A defect's message stays in the log.
   */
  readonly messageShown: boolean;
  /** What the answer says instead of the error's message, when the message is not for a client. */
  readonly says?: string;
  /** Transient: asked again after this many seconds the same request may succeed (Retry-After). */
  readonly retryAfterSeconds?: Of<E, number>;
  /** Fields of the error a client is shown with the answer. */
  readonly details?: (error: E) => unknown;
  readonly headers?: (error: E) => Readonly<Record<string, string>>;
  /** Every Task of the push flow retries it before the flow fails (lib/server/flows/push.asl.json). */
  readonly retriedByFlow?: boolean;
  /** The error carries the name of another across a boundary (a flow's Task failure); it is answered as that one. */
  readonly relays?: (error: E) => string;
  /**
   * The error wraps its `cause` and is answered as the cause is, its message followed by `adds`
   * and its details joined by `details`: a request that wrote part of its work names what it
   * wrote, whatever stopped it. A cause answered as a defect is answered `failed`, still naming it.
   */
  readonly answeredAsCause?: (error: E) => {
    readonly adds: string;
    readonly details: Readonly<Record<string, unknown>>;
    readonly failed: string;
  };
};

/** Every error answer's body (docs/http-api.md, "Errors"): what a client reads back. */
export type ProblemBody = {
  readonly error: { readonly code: string; readonly message: string; readonly details?: unknown };
};

/** How long a client is told to wait when something cannot be asked now; the gateway's own 503 says the same. */
export const notNowSeconds = 2;

/** A refusal: as asked, the request can never succeed; the operator is told why. */
export const refused = <E extends Error>(
  error: ErrorClass<E>,
  status: Of<E, number>,
  code: Of<E, string>,
  more: Pick<ErrorRow<E>, 'details' | 'headers' | 'retryAfterSeconds'> = {},
): ErrorRow<E> => ({ error, status, code, messageShown: true, ...more });

/** "Not now", never "no": nothing was half-done, and the same request can succeed after a wait. */
export const tryAgain = <E extends Error>(
  error: ErrorClass<E> | undefined,
  more: Partial<Pick<ErrorRow<E>, 'says' | 'messageShown' | 'retryAfterSeconds' | 'retriedByFlow'>> = {},
): ErrorRow<E> => ({
  error,
  status: 503,
  code: 'try_again',
  messageShown: true,
  retryAfterSeconds: notNowSeconds,
  ...more,
});

/** Never answered as itself: caught where it is thrown, or a defect if it reaches an edge. */
export const internal = <E extends Error>(error: ErrorClass<E>): ErrorRow<E> => ({
  error,
  status: 500,
  code: 'internal',
  messageShown: false,
});

/** Answered as the error whose name it carries. */
export const relaying = <E extends Error>(
  error: ErrorClass<E>,
  relays: (error: E) => string,
): ErrorRow<E> => ({
  ...internal(error),
  relays,
});

// A row's callbacks take its own class; a table holds rows of many classes.
// biome-ignore lint/suspicious/noExplicitAny: each row is typed by its class where it is written
type AnyRow = ErrorRow<any>;

/** An area's rows by error name: the class's own name, or the name a failure arrives by. */
export class ErrorTable {
  readonly rows: ReadonlyMap<string, ErrorRow>;
  readonly #byClass = new Map<unknown, ErrorRow>();

  constructor(rows: Readonly<Record<string, AnyRow>>, ...joined: readonly ErrorTable[]) {
    const all = new Map<string, ErrorRow>(joined.flatMap((table) => [...table.rows]));
    for (const [name, row] of Object.entries(rows)) all.set(name, row);
    this.rows = all;
    for (const row of all.values()) if (row.error) this.#byClass.set(row.error, row);
  }

  /** The row of the error's class, else of the nearest class it extends that has one. */
  rowOf(error: unknown): ErrorRow | undefined {
    if (typeof error !== 'object' || error === null) return undefined;
    for (let proto = Object.getPrototypeOf(error); proto; proto = Object.getPrototypeOf(proto)) {
      const row = this.#byClass.get(proto.constructor);
      if (row) return row;
    }
    return undefined;
  }

  named(name: string): ErrorRow | undefined {
    return this.rows.get(name);
  }
}

/** The row's value for this error, or undefined when it depends on an error that is not at hand. */
export function rowValue<T>(value: Of<Error, T> | undefined, error: Error | undefined): T | undefined {
  if (typeof value !== 'function') return value;
  return error ? (value as (error: Error) => T)(error) : undefined;
}

/**
 * The status a client is answered for a failure known only by its name, or undefined when it is
 * not answered as itself (no row, a defect's row, or an answer that needs the error's fields).
 */
export function answeredStatus(row: ErrorRow | undefined): number | undefined {
  if (!row || typeof row.status !== 'number' || typeof row.code !== 'string') return undefined;
  return row.status < 500 || row.retryAfterSeconds !== undefined ? row.status : undefined;
}
