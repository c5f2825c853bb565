import { type HttpTransport, NoAnswerError, noAnswerIn } from './transport.ts';

/**
 * Requests over fetch, the operator CLI's: `send` is the global fetch unless a test hands in its
 * own. The global is read at each request, never when this module loads, so a process that
 * asks only through nodeHttpTransport never starts fetch and its WebAssembly parser.
 */
export function fetchTransport(send?: typeof fetch): HttpTransport {
  return async (request) => {
    const outgoing = new Request(request.url, {
      method: request.method,
      headers: request.headers,
      ...(request.body !== undefined ? { body: request.body } : {}),
      signal: AbortSignal.timeout(request.timeoutMs),
    });
    try {
      const response = await (send ?? fetch)(outgoing);
      return { status: response.status, headers: response.headers, text: await response.text() };
    } catch (error) {
      throw new NoAnswerError(reasonOf(error, request.timeoutMs), { cause: error });
    }
  };
}

/** fetch rejects with a TypeError whose cause holds the errno code, or with the timeout's own error. */
function reasonOf(error: unknown, timeoutMs: number): string {
  const name = (error as Error).name;
  if (name === 'TimeoutError' || name === 'AbortError') return noAnswerIn(timeoutMs);
  return (error as { cause?: { code?: string } }).cause?.code ?? name;
}
