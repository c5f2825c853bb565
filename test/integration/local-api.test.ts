import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningApi, startLocalApi } from '../../lib/local/http-server.ts';
import { localPartsFor } from '../../lib/local/parts.ts';
import { checkConfig } from '../../lib/server/setup/config.ts';

// Nothing here reaches a store: the parts are built on first use, and no handler uses one.
const parts = localPartsFor(
  checkConfig({
    region: 'us-east-1',
    inventoryTable: 'unused-inventory',
    identityTable: 'unused-identity',
    controlQueueUrl: 'http://127.0.0.1:1/queue/control.fifo',
    deadLetterQueueUrl: 'http://127.0.0.1:1/queue/dead.fifo',
  }),
);

/** The local HTTP server's own answers, before any handler runs. */
describe('the local API server', () => {
  let api: RunningApi;
  beforeAll(async () => {
    api = await startLocalApi({ port: 0, parts });
  });
  afterAll(() => api.stop());

  const code = async (response: Response) =>
    ((await response.json()) as { error: { code: string } }).error.code;

  it('answers 404 naming the route for an unknown path', async () => {
    const response = await fetch(`${api.url}/nowhere`);
    expect(response.status).toBe(404);
    expect(await code(response)).toBe('route_not_found');
  });

  it('serves its own OpenAPI document, open, with an ETag a client asks again with for a 304', async () => {
    const first = await fetch(`${api.url}/openapi.json`);
    expect(first.status).toBe(200);
    expect(first.headers.get('cache-control')).toBe('public, max-age=300');
    const document = (await first.json()) as { openapi: string; paths: Record<string, unknown> };
    expect(document.openapi).toBe('3.1.0');
    expect(Object.keys(document.paths)).toContain('/openapi.json');
    const again = await fetch(`${api.url}/openapi.json`, {
      headers: { 'if-none-match': first.headers.get('etag') as string },
    });
    expect(again.status).toBe(304);
  });

  it('answers 405 with Allow for a known path and another method', async () => {
    const response = await fetch(`${api.url}/health`, { method: 'DELETE' });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET');
  });

  it('answers 400, not 500, to a path that is not valid percent-encoding', async () => {
    const response = await fetch(`${api.url}/nodes/%E0%A4%A/declaration`);
    expect(response.status).toBe(400);
    expect(await code(response)).toBe('invalid_path');
  });

  it('answers 413 to a body over the limit without calling a handler', async () => {
    const response = await fetch(`${api.url}/health`, { method: 'GET', headers: {}, body: undefined });
    expect(response.status).toBe(200);
    const big = await fetch(`${api.url}/push`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: 'x'.repeat(70 * 1024),
    });
    expect(big.status).toBe(413);
    expect(await code(big)).toBe('body_too_large');
  });

  /** A request exactly as written: fetch would not send these paths and Host headers. */
  const raw = (path: string, headers: Record<string, string> = {}, method = 'GET', body = '') =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const { port } = new URL(api.url);
      const sent = request({ host: '127.0.0.1', port, path, method, headers }, (response) => {
        let text = '';
        response.on('data', (chunk: Buffer) => {
          text += chunk.toString();
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
      });
      sent.once('error', reject);
      sent.end(body);
    });

  it('answers query parameters named like Object.prototype members as it answers any other', async () => {
    const answers: Record<string, number> = {};
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty'])
      for (const [method, path, body] of [
        ['GET', '/health', ''],
        ['GET', '/hosts/alpha/declaration', ''],
        ['POST', '/nodes', '{}'],
      ] as const)
        answers[`${method} ${path}?${name}=x`] = (
          await raw(`${path}?${name}=x`, { 'content-type': 'application/json' }, method, body)
        ).status;
    const expected = Object.fromEntries(
      Object.keys(answers).map((key) => [
        key,
        key.startsWith('GET /health') ? 200 : key.startsWith('GET /hosts') ? 401 : 400,
      ]),
    );
    expect(answers).toEqual(expected);
  });

  it('refuses a request whose Host header is not a host name, without reading it', async () => {
    for (const host of ['exa mple', '[::1', 'a:b:c', '%'])
      expect({ host, status: (await raw('/health', { host })).status }).toEqual({ host, status: 403 });
  });

  it('reads a path that starts with two slashes as a path, not as a host, and refuses its empty segment', async () => {
    const answer = await raw('//x/health');
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toEqual({
      error: {
        code: 'invalid_path',
        message: 'the path "//x/health" has an empty segment: it is routed as sent',
      },
    });
  });

  it('takes only the path of an absolute target naming loopback, and answers 400 to one that names no path', async () => {
    const { port } = new URL(api.url);
    expect((await raw(`http://127.0.0.1:${port}/health`)).status).toBe(200);
    expect((await raw('http://elsewhere.example/health')).status).toBe(403);
    const answer = await raw('*', {}, 'OPTIONS');
    expect(answer.status).toBe(400);
    expect(await code(new Response(answer.body))).toBe('invalid_path');
  });
});
