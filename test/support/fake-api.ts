import { execFile, spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';

/** What a fake route answers: a status and a JSON body. */
export type FakeAnswer = { readonly status: number; readonly body: unknown };
export type FakeRoute = (request: { method: string; url: URL; body: unknown }) => FakeAnswer | undefined;

/**
 * A stand-in for the control plane's HTTP API on 127.0.0.1, answering from `route` and keeping
 * every request it took: the CLI's own behaviour (what it prints, asks and exits with) is
 * checked without a control plane. Listening is allowed in unit tests; the CLI runs in a
 * process of its own and connects to it.
 */
export async function fakeApi(route: FakeRoute): Promise<{
  readonly url: string;
  readonly requests: { method: string; path: string; body: unknown }[];
  close(): Promise<void>;
}> {
  const requests: { method: string; path: string; body: unknown }[] = [];
  const server: Server = createServer(async (request: IncomingMessage, response) => {
    let text = '';
    for await (const chunk of request) text += chunk;
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    const body = text ? JSON.parse(text) : undefined;
    requests.push({ method: request.method ?? 'GET', path: `${url.pathname}${url.search}`, body });
    const answer = route({ method: request.method ?? 'GET', url, body }) ?? {
      status: 404,
      body: { error: { code: 'not_found', message: `no route ${url.pathname} in this fake` } },
    };
    response.writeHead(answer.status, { 'content-type': 'application/json' });
    response.end(JSON.stringify(answer.body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

export const meshBin = fileURLToPath(new URL('../../bin/mesh.ts', import.meta.url));

export type Ran = { code: number | null; stdout: string; stderr: string };

/** Runs `mesh` against `api` as a person would, with its output read whole; `stopAfterMs` ends it as Ctrl-C would. */
export function runMesh(
  api: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
  stopAfterMs = 20_000,
): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [meshBin, '--api', api, ...args],
      { timeout: stopAfterMs, killSignal: 'SIGINT', env: { ...process.env, ...env } },
      (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr }),
    );
  });
}

/** Runs `mesh` with its stdout's reader gone before it prints, as `mesh status | head -0` leaves it. */
export function runMeshReaderGone(api: string, args: readonly string[]): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [meshBin, '--api', api, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('close', (code) => resolve({ code, stdout: '', stderr }));
  });
}
