import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkConfig } from '../../lib/config.ts';
import { type RunningApi, startLocalApi } from '../../lib/runtime/http-server.ts';
import { partsFor } from '../../lib/wiring.ts';

// Nothing here reaches a store: the parts are built on first use, and no handler uses one.
const parts = partsFor(
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

  it('answers 405 with Allow for a known path and another method', async () => {
    const response = await fetch(`${api.url}/health`, { method: 'DELETE' });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('GET');
  });

  it('answers 400, not 500, to a path that is not valid percent-encoding', async () => {
    const response = await fetch(`${api.url}/nodes/%E0%A4%A/declaration`);
    expect(response.status).toBe(400);
    expect(await code(response)).toBe('invalid_request');
  });

  it('answers 413 to a body over the limit without calling a handler', async () => {
    const response = await fetch(`${api.url}/health`, { method: 'GET', headers: {}, body: undefined });
    expect(response.status).toBe(200);
    const big = await fetch(`${api.url}/push`, { method: 'POST', body: 'x'.repeat(70 * 1024) });
    expect(big.status).toBe(413);
    expect(await code(big)).toBe('body_too_large');
  });
});
