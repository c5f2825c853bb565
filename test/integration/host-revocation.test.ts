import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MeshConfig } from '../../lib/config.ts';
import { generateNodeKeys, type NodeKeys, signingKeyOf } from '../../lib/host/keys.ts';
import { hostProof } from '../../lib/host/proof.ts';
import { type RunningApi, startLocalApi } from '../../lib/runtime/http-server.ts';
import { partsFor } from '../../lib/wiring.ts';
import { provisionTestResources } from '../support/resources.ts';

let config: MeshConfig;
let api: RunningApi;

beforeAll(async () => {
  config = await provisionTestResources('revoke');
  api = await startLocalApi({ port: 0, parts: partsFor(config) });
});

afterAll(async () => {
  await api?.stop();
});

const operator = async (method: string, path: string, body?: unknown) => {
  const answer = await fetch(`${api.url}${path}`, {
    method,
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
};

async function enrol(node: string): Promise<NodeKeys> {
  const { body } = await operator('POST', `/nodes/${node}/token`, {});
  const { keys } = await generateNodeKeys();
  const answer = await fetch(`${api.url}/enrol`, {
    method: 'POST',
    body: JSON.stringify({
      node,
      token: body.token,
      keys: { signing: keys.signing.publicJwk, sealing: keys.sealing.publicJwk },
    }),
  });
  expect(answer.status).toBe(200);
  return keys;
}

/** The host's signed fetch of its declaration: the status, and the error code when refused. */
async function fetchAs(node: string, keys: NodeKeys) {
  const url = `${api.url}/hosts/${node}/declaration`;
  const authorization = await hostProof(signingKeyOf(node, keys), { method: 'GET', url });
  const answer = await fetch(url, { headers: { authorization } });
  const body = (await answer.json()) as { error?: { code: string } };
  return `${answer.status} ${body.error?.code ?? 'ok'}`;
}

describe('revoking a host identity takes effect at the next request', () => {
  it('disenrol: the node stays, its key is refused at once, and a new enrolment brings it back', async () => {
    await operator('POST', '/nodes', { node: 'alpha' });
    const first = await enrol('alpha');
    const before = await fetchAs('alpha', first);

    const disenrolled = await operator('DELETE', '/nodes/alpha/enrolment');
    const after = await fetchAs('alpha', first);
    const again = await enrol('alpha');

    expect(before).toBe('404 not_sent');
    expect(disenrolled).toEqual({ status: 200, body: { node: 'alpha', wasEnrolled: true, keysRevoked: 1 } });
    expect(after).toBe('401 not_enrolled');
    expect(await fetchAs('alpha', again)).toBe('404 not_sent');
    expect(await fetchAs('alpha', first)).toBe('401 not_enrolled');
    expect((await operator('GET', '/status')).body.nodes).toEqual(
      expect.arrayContaining([expect.objectContaining({ node: 'alpha', enrolled: true })]),
    );
  });

  it('a node re-enrolled with new keys: its old key is refused at once', async () => {
    await operator('POST', '/nodes', { node: 'beta' });
    const old = await enrol('beta');
    expect(await fetchAs('beta', old)).toBe('404 not_sent');

    const fresh = await enrol('beta');

    expect(await fetchAs('beta', old)).toBe('401 not_enrolled');
    expect(await fetchAs('beta', fresh)).toBe('404 not_sent');
  });

  it('node remove: its host is refused at once, and an unknown node cannot be disenrolled', async () => {
    await operator('POST', '/nodes', { node: 'gamma' });
    const keys = await enrol('gamma');
    expect(await fetchAs('gamma', keys)).toBe('404 not_sent');

    const removed = await operator('DELETE', '/nodes/gamma');
    const unknown = await operator('DELETE', '/nodes/gamma/enrolment');

    expect(removed.status).toBe(200);
    expect(await fetchAs('gamma', keys)).toBe('401 not_enrolled');
    expect(unknown).toMatchObject({ status: 404, body: { error: { code: 'node_unknown' } } });
  });
});
