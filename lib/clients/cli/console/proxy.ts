import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { matchRoute } from '../../../server/functions/routes.ts';
import type { Route } from '../../../server/functions/table.ts';
import type { ApiAnswer } from '../../http/api-client.ts';
import { listen, type RunningServer } from '../../http/listen.ts';
import {
  loopbackRefusal,
  refuseBrokenFraming,
  sendRefusal,
  settledUnbroken,
} from '../../http/loopback-guard.ts';
import { isRefusal, requestTarget } from '../../http/request-target.ts';
import { type ConsoleSettings, consolePages, type StaticPage, servePage } from './pages.ts';
import { consoleReadRoutes } from './routes.ts';

/**
 * `mesh console` for a deployed stack, as `kubectl proxy` does it: the console's pages served on
 * 127.0.0.1, and the page's reads forwarded to the stack, signed with the operator's own
 * credentials (SigV4, by the CLI's API client). Nothing new listens on the internet, and the
 * proxy signs only what the console reads: the GET routes of lib/clients/cli/console/routes.ts. Any other
 * method or path is refused before anything is signed, so a page on another site cannot use it
 * to write; and like every server `npm start` runs it takes requests from this machine's own
 * clients only (lib/clients/http/loopback-guard.ts): a Host other than loopback's (DNS rebinding), a
 * foreign Origin, a body, a broken framing are refused.
 */
export type ConsoleProxyOptions = {
  /** Forwards one signed GET to the stack; the CLI's ApiClient.send. */
  readonly forward: (path: string) => Promise<ApiAnswer>;
  readonly settings: ConsoleSettings;
  /** 0 for any free port. */
  readonly port: number;
};

export type RunningConsoleProxy = RunningServer;

const host = '127.0.0.1';
const readRoutes: readonly Route[] = consoleReadRoutes.map((path) => ({
  method: 'GET',
  path,
  auth: 'operator',
  role: 'viewer',
  handler: 'console',
}));

export async function startConsoleProxy(options: ConsoleProxyOptions): Promise<RunningConsoleProxy> {
  const pages = consolePages(options.settings);
  let port = options.port;
  const server = createServer((request, response) => {
    proxy(request, response, { pages, port, forward: options.forward }).catch((error: unknown) => {
      if (!response.headersSent)
        send(response, 502, 'bad_gateway', `the stack could not be asked: ${(error as Error).message}`);
    });
  });
  refuseBrokenFraming(server);
  const running = await listen(server, options.port, host);
  port = running.port;
  return running;
}

async function proxy(
  request: IncomingMessage,
  response: ServerResponse,
  context: {
    readonly pages: readonly StaticPage[];
    readonly port: number;
    readonly forward: ConsoleProxyOptions['forward'];
  },
) {
  const method = request.method ?? 'GET';
  const target = request.url ?? '/';
  const refusal = loopbackRefusal({ method, target, headers: request.headers }, context.port);
  if (refusal) {
    request.resume();
    sendRefusal(response, refusal);
    return;
  }
  const url = requestTarget(target);
  if (isRefusal(url)) {
    sendRefusal(response, url);
    return;
  }
  if (servePage(context.pages, { method, path: url.path }, response)) return;
  let match: ReturnType<typeof matchRoute>;
  try {
    match = matchRoute(readRoutes, method, url.path);
  } catch {
    match = undefined;
  }
  if (!match) {
    send(response, 404, 'route_not_found', `the console does not forward ${method} ${url.path}`);
    return;
  }
  if ('allowed' in match) {
    send(response, 405, 'method_not_allowed', `the console forwards reads only, not ${method}`);
    return;
  }
  if (!(await settledUnbroken(request))) return;
  const answer = await context.forward(`${url.path}${url.search}`);
  response.writeHead(answer.status, {
    'content-type': 'application/json',
    'cache-control': 'no-store',
    ...(answer.headers.get('retry-after')
      ? { 'retry-after': String(answer.headers.get('retry-after')) }
      : {}),
  });
  response.end(answer.body === undefined ? '' : JSON.stringify(answer.body));
}

function send(response: ServerResponse, status: number, code: string, message: string) {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify({ error: { code, message } }));
}
