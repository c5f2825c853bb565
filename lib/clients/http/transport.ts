/** What callers read of an answer's headers: case-insensitive, several values joined by `, `. */
export type HeaderReader = { get(name: string): string | null };

/** A request as ApiClient makes it and a signer signs it: exactly what goes on the wire, Host aside. */
export type OutgoingRequest = {
  readonly method: string;
  readonly url: URL;
  /** Lower-case names. Host is never among them: each transport sends it from `url`. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
};

/** An answer as it came back, its body unread as JSON. */
export type TransportAnswer = {
  readonly status: number;
  readonly headers: HeaderReader;
  readonly text: string;
};

/**
 * Sends one request and waits at most `timeoutMs` for its whole answer. When no whole answer
 * comes (refused, reset, a name that does not resolve, the time is up) it rejects with
 * NoAnswerError, never with anything else.
 */
export type HttpTransport = (
  request: OutgoingRequest & { readonly timeoutMs: number },
) => Promise<TransportAnswer>;

/** No whole answer came; `reason` is the errno code (ECONNREFUSED, ENOTFOUND, …) or `no answer in N s`. */
export class NoAnswerError extends Error {
  override name = 'NoAnswerError';
  readonly reason: string;
  constructor(reason: string, options?: ErrorOptions) {
    super(`no answer (${reason})`, options);
    this.reason = reason;
  }
}

/** The reason a timed-out request gives. */
export const noAnswerIn = (timeoutMs: number): string => `no answer in ${timeoutMs / 1000} s`;
