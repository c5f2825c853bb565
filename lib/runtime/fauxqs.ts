import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { Server } from 'node:net';
import { startFauxqs } from 'fauxqs';
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
  const bound = seen
    .map((server) => server.address())
    .find((address) => typeof address === 'object' && address?.port === fauxqs.port);
  if (!bound || typeof bound !== 'object' || !loopback.has(bound.address)) {
    await fauxqs.stop();
    throw new EmulatorStartError(
      `fauxqs could not be held to loopback (it listened on ${bound && typeof bound === 'object' ? bound.address : 'an address not seen'}): not started`,
    );
  }
  // fauxqs made its files with this process's umask; see tightenTree for why once is enough
  if (options.dataDir) tightenTree(options.dataDir);
  return { port: fauxqs.port, stop: () => fauxqs.stop() };
}
