import { connect } from 'node:net';

/** What a server said to bytes sent as they are: its first status line's code, and all it wrote. */
export type RawAnswer = { readonly status: number | undefined; readonly text: string };

/**
 * Sends `bytes` on one connection exactly as given, in one write (as `printf … | nc` does), and
 * reads until the server closes or `quietMs` pass without a byte: no client normalises the
 * request, frames its body or splits what follows it.
 */
export function sendRaw(port: number, bytes: string, quietMs = 400): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let text = '';
    let timer: NodeJS.Timeout | undefined;
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      resolve({ status: match ? Number(match[1]) : undefined, text });
    };
    const quiet = () => {
      clearTimeout(timer);
      timer = setTimeout(done, quietMs);
    };
    socket.on('connect', () => {
      socket.write(bytes, 'latin1');
      quiet();
    });
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      quiet();
    });
    socket.on('close', done);
    socket.on('error', done);
  });
}
