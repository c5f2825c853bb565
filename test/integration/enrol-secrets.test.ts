import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateNodeKeys } from '../../lib/clients/host/keys.ts';
import { type RunningApi, startLocalApi } from '../../lib/local/http-server.ts';
import { localPartsFor } from '../../lib/local/parts.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import { provisionTestResources } from '../support/resources.ts';
import { enrolmentFixture } from './enrol-fixtures.ts';

let config: MeshConfig;
let api: RunningApi;
let fixture: ReturnType<typeof enrolmentFixture>;

/** Everything written to stdout and stderr while `body` runs (Powertools logs there). */
async function capturingLogs(body: () => Promise<void>): Promise<string> {
  const captured: string[] = [];
  const streams = [process.stdout, process.stderr];
  const originals = streams.map((stream) => stream.write.bind(stream));
  streams.forEach((stream, index) => {
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      captured.push(String(chunk));
      return (originals[index] as (...a: unknown[]) => boolean)(chunk, ...rest);
    }) as typeof stream.write;
  });
  try {
    await body();
  } finally {
    streams.forEach((stream, index) => {
      stream.write = originals[index] as typeof stream.write;
    });
  }
  return captured.join('');
}

beforeAll(async () => {
  config = await provisionTestResources('enrolsecret');
  fixture = enrolmentFixture(config);
  api = await startLocalApi({ port: 0, parts: localPartsFor({ ...config, logLevel: 'DEBUG' }) });
});

afterAll(async () => {
  await api?.stop();
});

describe('the token secret', () => {
  it('appears in no log line and in no stored item of either table', async () => {
    await fixture.addNode('secretive');
    const tokens: string[] = [];
    const logs = await capturingLogs(async () => {
      for (const _ of [1, 2]) {
        const issued = await fetch(`${api.url}/nodes/secretive/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"ttl":"1h"}',
        });
        tokens.push(((await issued.json()) as { token: string }).token);
      }
      const { keys } = await generateNodeKeys();
      const presented = { signing: keys.signing.publicJwk, sealing: keys.sealing.publicJwk };
      const post = (token: string, node = 'secretive') =>
        fetch(`${api.url}/enrol`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ node, token, keys: presented }),
        });
      // Refused (replaced), refused (unknown node), enrolled, enrolled again, then a malformed body.
      const statuses = [];
      for (const attempt of [
        post(tokens[0] as string),
        post(tokens[1] as string, 'nobody'),
        post(tokens[1] as string),
        post(tokens[1] as string),
      ]) {
        statuses.push((await attempt).status);
      }
      expect(statuses).toEqual([410, 404, 200, 200]);
      await fetch(`${api.url}/enrol`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: `{"node":"secretive","token":"${tokens[1]}","keys":{}}`,
      });
    });
    const secrets = tokens.map((token) => token.split('_')[2] as string);
    const stored = JSON.stringify([
      ...(await fixture.scan('inventory')),
      ...(await fixture.scan('identity')),
    ]);

    expect(secrets.every((secret) => secret.length === 43)).toBe(true);
    for (const secret of secrets) {
      expect(stored).not.toContain(secret);
      expect(logs).not.toContain(secret);
    }
    expect(stored).toContain('secretive');
  });
});
