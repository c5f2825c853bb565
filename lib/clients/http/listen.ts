import type { Server } from 'node:http';

export type RunningServer = {
  readonly url: string;
  readonly port: number;
  readonly server: Server;
  stop(): Promise<void>;
};

/** Starts an HTTP server on `host:port` (0 for any free port) and answers where it listens and how to stop it. */
export async function listen(server: Server, port: number, host: string): Promise<RunningServer> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  const bound = address && typeof address === 'object' ? address.port : port;
  return {
    url: `http://${host}:${bound}`,
    port: bound,
    server,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
