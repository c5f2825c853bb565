import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { Server as HttpServer, IncomingMessage, ServerResponse } from 'node:http';
import type { Server } from 'node:net';
import { startFauxqs } from 'fauxqs';
import {
  declaresBody,
  isLoopbackAuthority,
  mediaTypeOf,
  sendRefusal,
} from '../clients/http/loopback-guard.ts';
import { tightenTree } from './data-folder.ts';
import { EmulatorStartError } from './errors.ts';

export type RunningFauxqs = { readonly port: number; stop(): Promise<void> };

/** Node publishes here every server's listen() before it binds, with the options it binds with. */
const listenStarts = 'tracing:net.server.listen:asyncStart';
const everyInterface = new Set([undefined, '', '0.0.0.0', '::']);
const loopback = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

/**
 * fauxqs in this process, listening on loopback only. `startFauxqs` listens on 0.0.0.0 and takes
 * no address to listen on (its `host` option names the host in queue URLs). While it starts, a
 * listen on every interface is turned to 127.0.0.1 on Node's `net.server.listen` tracing channel,
 * before the socket is bound. The address fauxqs then holds is checked: if it is not loopback
 * (a change in fauxqs or Node), fauxqs is stopped and the start refused, never left open to the
 * network. Servers other code in this process starts in the same moment are held to loopback
 * too, which is what this runtime wants of everything it listens on. Its data folder is made
 * this user's only once it has created its files.
 */
export async function startLoopbackFauxqs(options: { readonly dataDir?: string }): Promise<RunningFauxqs> {
  const seen: Server[] = [];
  const toLoopback = (message: unknown) => {
    const { server, options: listen } = message as { server: Server; options: { host?: string } };
    seen.push(server);
    if (everyInterface.has(listen.host)) listen.host = '127.0.0.1';
  };
  subscribe(listenStarts, toLoopback);
  let fauxqs: Awaited<ReturnType<typeof startFauxqs>>;
  try {
    fauxqs = await startFauxqs({
      port: 0,
      logger: false,
      ...(options.dataDir ? { dataDir: options.dataDir } : {}),
    });
  } finally {
    unsubscribe(listenStarts, toLoopback);
  }
  const listening = seen.find((server) => {
    const address = server.address();
    return typeof address === 'object' && address?.port === fauxqs.port;
  });
  const bound = listening?.address();
  if (!bound || typeof bound !== 'object' || !loopback.has(bound.address)) {
    await fauxqs.stop();
    throw new EmulatorStartError(
      `fauxqs could not be held to loopback (it listened on ${bound && typeof bound === 'object' ? bound.address : 'an address not seen'}): not started`,
    );
  }
  const server = listening;
  if (!server || !('setTimeout' in server)) {
    await fauxqs.stop();
    throw new EmulatorStartError('fauxqs’s HTTP server was not seen: not started');
  }
  guardEmulator(server as HttpServer, fauxqs.port);
  // fauxqs made its files with this process's umask; see tightenTree for why once is enough
  if (options.dataDir) tightenTree(options.dataDir);
  return { port: fauxqs.port, stop: () => fauxqs.stop() };
}

/** The media types a page can send anywhere without asking first (CORS's simple requests). */
const formTypes = new Set(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data']);

/**
 * The loopback guard of every server `npm start` runs (loopback-guard.ts), for an emulator: its
 * clients are the SDK's, which send the endpoint's own `Host`, no `Origin`, and the service's
 * own media type (`application/x-amz-json-1.0`), never a form. fauxqs's answers to anything else
 * would be SQS's (the query protocol takes forms), so a page that found its port could send to
 * the control queue. The server's request listeners are put behind the check: what is refused
 * never reaches fauxqs.
 */
export function guardEmulator(server: HttpServer, port: number): void {
  const listeners = server.listeners('request') as Array<
    (request: IncomingMessage, response: ServerResponse) => void
  >;
  server.removeAllListeners('request');
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const host = request.headers.host;
    const refusal =
      host === undefined || !isLoopbackAuthority(host, port)
        ? { status: 403, code: 'host_not_allowed', message: 'this emulator answers only to loopback' }
        : request.headers.origin !== undefined
          ? { status: 403, code: 'origin_not_allowed', message: 'this emulator answers no web page' }
          : declaresBody(request.headers) && formTypes.has(mediaTypeOf(request.headers['content-type']))
            ? { status: 415, code: 'unsupported_media_type', message: 'this emulator takes no form' }
            : undefined;
    if (refusal) {
      request.resume();
      sendRefusal(response, refusal);
      return;
    }
    for (const listener of listeners) listener.call(server, request, response);
  });
}
