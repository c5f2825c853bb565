import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateNodeKeys, type NodeKeys } from '../../lib/clients/host/keys.ts';
import { type RunningApi, startLocalApi } from '../../lib/local/http-server.ts';
import { localPartsFor } from '../../lib/local/parts.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import { hostCalls } from '../support/host-calls.ts';
import { provisionTestResources } from '../support/resources.ts';

let config: MeshConfig;
let api: RunningApi;

beforeAll(async () => {
  config = await provisionTestResources('revoke');
  api = await startLocalApi({ port: 0, parts: localPartsFor(config) });
});

afterAll(async () => {
  await api?.stop();
});

const calls = () => hostCalls(api.url);
const operator = (method: string, path: string, body?: unknown) => calls().operator(method, path, body);
const fetchAs = (node: string, keys: NodeKeys) => calls().fetchAs(node, keys);

async function enrol(node: string): Promise<NodeKeys> {
  const { keys } = await generateNodeKeys();
  await calls().enrol(node, keys);
  return keys;
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
