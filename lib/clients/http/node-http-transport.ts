import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { type HeaderReader, type HttpTransport, NoAnswerError, noAnswerIn } from './transport.ts';

/**
 * Requests over node:http and node:https, the host agent's. Not fetch: fetch brings undici and
 * its WebAssembly HTTP parser, which keep an idle agent about 15 MB larger for its whole life
 * (`npm run bench -- agent-footprint` measures both). Node sends Host from the URL, as fetch
 * does, so a signature over `url.host` holds; the body's length is framing, added here.
 */
export const nodeHttpTransport: HttpTransport = (request) =>
  new Promise((resolve, reject) => {
    const fail = (error: unknown) =>
      reject(new NoAnswerError(reasonOf(error, request.timeoutMs), { cause: error }));
    const send = request.url.protocol === 'https:' ? httpsRequest : httpRequest;
    const headers =
      request.body === undefined
        ? request.headers
        : { ...request.headers, 'content-length': String(Buffer.byteLength(request.body)) };
    const outgoing = send(
      request.url,
      { method: request.method, headers, signal: AbortSignal.timeout(request.timeoutMs) },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', fail);
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: headerReader(response.headers),
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    outgoing.on('error', fail);
    outgoing.end(request.body);
  });

/** node:http fails with the errno code (ECONNREFUSED, ECONNRESET, …), or AbortError when the time is up. */
function reasonOf(error: unknown, timeoutMs: number): string {
  if ((error as Error).name === 'AbortError') return noAnswerIn(timeoutMs);
  return (error as NodeJS.ErrnoException).code ?? (error as Error).name;
}

function headerReader(headers: IncomingHttpHeaders): HeaderReader {
  return {
    get(name) {
      const value = headers[name.toLowerCase()];
      if (value === undefined) return null;
      return Array.isArray(value) ? value.join(', ') : value;
    },
  };
}
