import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * What every HTTP server `npm start` runs (the API with its console pages, and `mesh console`'s
 * proxy) asks of a request before anything else sees it: that it comes from one of this
 * machine's own clients. A browser on this machine is a client of every site it has open, so
 * listening on 127.0.0.1 is not enough:
 *
 * - `Host` must name loopback (`127.0.0.1`, `localhost`, `[::1]`) and the port served: a page that
 *   rebinds its own name to 127.0.0.1 (DNS rebinding) sends its own name, and could otherwise read
 *   the answers;
 * - `Origin`, when sent, must be the server's own loopback origin: a page on another origin (another
 *   site, or another port of this machine) sends its own, on every write a browser lets it make;
 * - a body must be `application/json`: a form (`text/plain`, `application/x-www-form-urlencoded`,
 *   `multipart/form-data`) is what a page can send anywhere without asking first, and a route that
 *   takes no body (GET, DELETE, HEAD) is refused one whole.
 *
 * Each refusal is a 4xx problem of its own code, answered before any route or handler is found,
 * so a refused request writes nothing. The CLI, the host agent and the console send exactly
 * what passes: a loopback URL's own `Host`, no `Origin` (or the console's own), JSON bodies.
 */
export type LoopbackRefusal = { readonly status: number; readonly code: string; readonly message: string };

/** The names this machine's clients reach a loopback server by, as a `Host` header writes them. */
export const loopbackNames: readonly string[] = ['127.0.0.1', 'localhost', '[::1]'];

/** The methods whose requests carry a body here; any other is refused one. */
const bodyMethods = new Set(['POST', 'PUT', 'PATCH']);

/** `host[:port]` split, the host lowercased; undefined when it is not that shape. */
function authorityOf(text: string): { readonly name: string; readonly port: number | undefined } | undefined {
  const match = /^(\[[0-9a-f:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/i.exec(text.trim());
  if (!match) return undefined;
  const [, name = '', port] = match;
  return { name: name.toLowerCase(), port: port === undefined ? undefined : Number(port) };
}

/** Whether `text` (a `Host` header or a URL's authority) names this machine's loopback at `port`. */
export function isLoopbackAuthority(text: string, port: number): boolean {
  const authority = authorityOf(text);
  if (!authority || !loopbackNames.includes(authority.name)) return false;
  return (authority.port ?? 80) === port;
}

/** The origins a page served here has: `http://` and a loopback name at the port served. */
const ownOrigins = (port: number) =>
  new Set(
    loopbackNames.flatMap((name) => [`http://${name}:${port}`, ...(port === 80 ? [`http://${name}`] : [])]),
  );

const single = (value: string | string[] | undefined): string | undefined =>
  Array.isArray(value) ? value.join(', ') : value;

/** Whether the request says it has a body: a length over 0, or any transfer coding. */
export function declaresBody(headers: IncomingHttpHeaders): boolean {
  if (headers['transfer-encoding'] !== undefined) return true;
  const length = single(headers['content-length']);
  return length !== undefined && length.trim() !== '0';
}

/** The media type of a `Content-Type`, parameters left out, lowercased. */
export const mediaTypeOf = (contentType: string | undefined): string =>
  (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';

/**
 * Why a request is refused, or undefined when it may go on. `port` is the port the server
 * answers on; `target` the request's target as sent (an absolute-form target's authority is
 * checked as its `Host` is).
 */
export function loopbackRefusal(
  request: { readonly method: string; readonly target: string; readonly headers: IncomingHttpHeaders },
  port: number,
): LoopbackRefusal | undefined {
  const { headers } = request;
  const host = single(headers.host);
  if (host === undefined || !isLoopbackAuthority(host, port))
    return {
      status: 403,
      code: 'host_not_allowed',
      message: `this server answers only requests addressed to ${loopbackNames.join(', ')} at port ${port}, not ${JSON.stringify(host ?? '')}`,
    };
  if (!request.target.startsWith('/') && request.target !== '*') {
    let authority: string | undefined;
    try {
      authority = new URL(request.target).host;
    } catch {
      authority = undefined;
    }
    if (authority === undefined || !isLoopbackAuthority(authority, port))
      return {
        status: 403,
        code: 'host_not_allowed',
        message: 'the request target names another host than this machine’s loopback',
      };
  }
  const origin = single(headers.origin);
  if (origin !== undefined && !ownOrigins(port).has(origin.trim().toLowerCase()))
    return {
      status: 403,
      code: 'origin_not_allowed',
      message: `requests from pages of ${JSON.stringify(origin)} are refused: this server takes requests from this machine’s own clients only`,
    };
  if (declaresBody(headers)) {
    if (!bodyMethods.has(request.method))
      return {
        status: 400,
        code: 'body_not_allowed',
        message: `${request.method} takes no body here`,
      };
    const media = mediaTypeOf(single(headers['content-type']));
    if (media !== 'application/json')
      return {
        status: 415,
        code: 'unsupported_media_type',
        message: `a body must be sent as application/json, not ${JSON.stringify(media || 'none')}`,
      };
  }
  return undefined;
}

/**
 * Requests whose connection broke framing (bytes after a request that are no request, a bad
 * header) are answered by the server's own clientError handler below and must not run: a
 * request without a length whose "body" follows it is parsed as a complete request, and the
 * bytes after it as a broken next one. The parser reads what one packet brought in one go, so by
 * the time the request's own body has ended and the event loop has turned once, a broken
 * remainder has been seen: `settledUnbroken` says whether the request may be answered.
 */
const broken = new WeakSet<Duplex>();

/** Resolves after the parser has read what came with the request; false when its connection broke. */
export async function settledUnbroken(request: IncomingMessage): Promise<boolean> {
  await new Promise((resolve) => setImmediate(resolve));
  return !broken.has(request.socket);
}

/**
 * Node's default answer to a connection that broke HTTP's framing is a bare `400 Bad Request`
 * written beside whatever the requests before it are answered; here the connection is marked,
 * so that no request of it still waiting runs its handler, answered once with a JSON problem,
 * and closed.
 */
export function refuseBrokenFraming(server: Server): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    broken.add(socket);
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    const [status, reason, code, message] =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'Request Header Fields Too Large', 'headers_too_large', 'the request’s headers are too large']
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'Request Timeout', 'request_timeout', 'the request did not arrive in time']
          : [
              400,
              'Bad Request',
              'malformed_request',
              'the request is not well-framed HTTP (a body without its length, or bytes that are no request): nothing was done',
            ];
    const body = JSON.stringify({ error: { code, message } });
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}

/** Answers a refusal as every error of the API is shaped. */
export function sendRefusal(response: ServerResponse, refusal: LoopbackRefusal): void {
  response.writeHead(refusal.status, { 'content-type': 'application/json', connection: 'close' });
  response.end(JSON.stringify({ error: { code: refusal.code, message: refusal.message } }));
}
