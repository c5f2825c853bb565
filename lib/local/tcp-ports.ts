import { createServer } from 'node:net';
import { PortInUseError } from './errors.ts';

/** A port the OS says is free now; the emulator binds it right after. */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('no port was assigned'));
      });
    });
  });
}

/** Fails with one clear line when the port is taken, instead of a stack trace from deep inside a server. */
export async function assertPortFree(port: number, variable: string, host = '127.0.0.1'): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) => {
      reject(error.code === 'EADDRINUSE' ? new PortInUseError(port, variable) : error);
    });
    server.listen(port, host, () => server.close(() => resolve()));
  });
}
