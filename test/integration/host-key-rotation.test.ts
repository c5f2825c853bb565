import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostApiClient } from '../../lib/clients/host/host-api-client.ts';
import {
  keysAfterRefusal,
  pendingDir,
  possessionProof,
  rotateHostKeys,
} from '../../lib/clients/host/key-rotation.ts';
import {
  loadNodeKeys,
  loadOrCreateNodeKeys,
  type NodeKeys,
  signingKeyOf,
} from '../../lib/clients/host/keys.ts';
import { ApiUnreachableError } from '../../lib/clients/http/api-client.ts';
import { type RunningApi, startLocalApi } from '../../lib/local/http-server.ts';
import { localPartsFor } from '../../lib/local/parts.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
import { RecordingSender } from '../support/control-fakes.ts';
import { hostCalls } from '../support/host-calls.ts';
import { provisionTestResources } from '../support/resources.ts';
import { KeysThenFault, StoppableStore } from '../support/stoppable-store.ts';
import { tableContents } from '../support/table-contents.ts';

const dirs: string[] = [];
const hostDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'mesh-rotate-'));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/**
 * The host calls, and `enrolled`: a node added and enrolled with keys kept in a new DIR, as
 * `mesh-host enrol` leaves them.
 */
function controlPlane(api: RunningApi) {
  const calls = hostCalls(api.url);
  const enrolled = async (node: string) => {
    await calls.operator('POST', '/nodes', { node });
    const dir = hostDir();
    const { keys } = await loadOrCreateNodeKeys(dir);
    const token = await calls.enrol(node, keys);
    return { dir, keys, token };
  };
  return { ...calls, enrolled };
}

describe('mesh-host rotate against the local API on DynamoDB Local', () => {
  let config: MeshConfig;
  let api: RunningApi;
  beforeAll(async () => {
    config = await provisionTestResources('rotate');
    api = await startLocalApi({ port: 0, parts: localPartsFor(config) });
  });
  afterAll(() => api?.stop());

  it('replaces the keys: the new key works, the old one is refused, DIR holds the new keys, nothing is left over', async () => {
    const { operator, enrolled, fetchAs } = controlPlane(api);
    const { dir, keys: old } = await enrolled('rotor');
    await operator('POST', '/push', { node: 'rotor' });

    const outcome = await rotateHostKeys({ dir, api: api.url, node: 'rotor', current: old });
    const now = (await loadNodeKeys(dir)) as NodeKeys;

    expect(outcome).toEqual({ kind: 'rotated', thumbprint: now.thumbprint, previous: old.thumbprint });
    expect([await fetchAs('rotor', now), await fetchAs('rotor', old)]).toEqual([
      '200 ok',
      '401 not_enrolled',
    ]);
    expect(readdirSync(dir).sort()).toEqual(['sealing.jwk', 'signing.jwk']);
    const identity = (await tableContents(config))[config.identityTable] as Array<{
      pk: string;
      sk: string;
      thumbprint?: string;
    }>;
    expect(
      identity.filter((item) => item.pk === 'node#rotor').map((item) => [item.sk, item.thumbprint ?? null]),
    ).toEqual([
      ['enrolled', now.thumbprint],
      [`key#${now.thumbprint}`, now.thumbprint],
    ]);
  });

  it('a lost answer: the old key is refused, the agent and a second run both find the new key taken and finish', async () => {
    const { enrolled, fetchAs } = controlPlane(api);
    const { dir, keys: old } = await enrolled('lost');
    // what rotateHostKeys sends, its answer never read: the switch happened, DIR/next is not promoted
    const { keys: next } = await loadOrCreateNodeKeys(pendingDir(dir));
    await hostApiClient(api.url, signingKeyOf('lost', old)).send('POST', '/hosts/lost/keys', {
      keys: { signing: next.signing.publicJwk, sealing: next.sealing.publicJwk },
      possession: await possessionProof('lost', next, old.thumbprint),
    });
    expect([await fetchAs('lost', old), await fetchAs('lost', next)]).toEqual([
      '401 not_enrolled',
      '404 not_sent',
    ]);

    const agentFound = await keysAfterRefusal(dir, api.url, 'lost');
    const again = await rotateHostKeys({ dir, api: api.url, node: 'lost', current: agentFound as NodeKeys });

    expect(agentFound?.thumbprint).toBe(next.thumbprint);
    expect(readdirSync(dir).sort()).toEqual(['sealing.jwk', 'signing.jwk']);
    // the second run rotates once more, from the key the agent adopted
    expect(again).toMatchObject({ kind: 'rotated', previous: next.thumbprint });
  });

  it('refuses a possession proof not made by the new key, and an enrolment retried with the old keys afterwards', async () => {
    const { enrolled, fetchAs } = controlPlane(api);
    const { dir, keys: old, token } = await enrolled('forger');
    const { keys: next } = await loadOrCreateNodeKeys(pendingDir(dir));
    // the request's proof id is remembered (the replay guard); nothing else may change
    const withoutProofIds = async () =>
      Object.values(await tableContents(config)).map((items) =>
        (items as Array<{ pk: string }>).filter((item) => !item.pk.startsWith('proof#')),
      );
    const before = await withoutProofIds();

    const forged = await hostApiClient(api.url, signingKeyOf('forger', old)).send(
      'POST',
      '/hosts/forger/keys',
      {
        keys: { signing: next.signing.publicJwk, sealing: next.sealing.publicJwk },
        possession: await possessionProof('forger', { ...next, signing: old.signing }, old.thumbprint),
      },
    );
    expect([forged.status, (forged.body as { error: { code: string } }).error.code]).toEqual([
      400,
      'possession_invalid',
    ]);
    expect(await withoutProofIds()).toEqual(before);

    await rotateHostKeys({ dir, api: api.url, node: 'forger', current: old });
    const replayedEnrol = await fetch(`${api.url}/enrol`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        node: 'forger',
        token,
        keys: { signing: old.signing.publicJwk, sealing: old.sealing.publicJwk },
      }),
    });
    expect(replayedEnrol.status).toBe(403);
    expect(await fetchAs('forger', old)).toBe('401 not_enrolled');
    expect(await fetchAs('forger', (await loadNodeKeys(dir)) as NodeKeys)).toBe('404 not_sent');
  });
});

/** The store stops right after the new keys are written, before the switch is. */
describe('a rotation when DynamoDB Local is really stopped between its writes', () => {
  let store: StoppableStore;
  let api: RunningApi;

  beforeAll(async () => {
    store = await StoppableStore.start('rotate-fault');
  });
  afterAll(async () => {
    await api?.stop();
    await store?.remove();
  });

  it('answers "try again", keeps the old key working, and completes when run again', async () => {
    const { client, config } = await store.tables('rotatestop');
    const plain = localPartsFor(config, { clients: { dynamodb: client } });
    const nodeKeys = new KeysThenFault(plain.nodeKeys, () => store.stop());
    // A store of its own and no queue: what the enrolment and rotation tell the queue is kept here.
    const parts: Parts = localPartsFor(config, {
      clients: { dynamodb: client },
      overrides: { nodeKeys, sender: new RecordingSender() },
    });
    nodeKeys.armed = false;
    api = await startLocalApi({ port: 0, parts });
    const { enrolled, fetchAs } = controlPlane(api);
    const { dir, keys: old } = await enrolled('stopped');

    nodeKeys.armed = true;
    const whileDown = await rotateHostKeys({ dir, api: api.url, node: 'stopped', current: old }).catch(
      (error: unknown) => error,
    );
    await store.restart();
    const next = (await loadNodeKeys(pendingDir(dir))) as NodeKeys;
    const between = [await fetchAs('stopped', old), await fetchAs('stopped', next)];
    const afterwards = await rotateHostKeys({ dir, api: api.url, node: 'stopped', current: old });

    expect(whileDown).toBeInstanceOf(ApiUnreachableError);
    expect(between).toEqual(['404 not_sent', '401 not_enrolled']);
    expect(afterwards).toEqual({ kind: 'rotated', thumbprint: next.thumbprint, previous: old.thumbprint });
    expect([await fetchAs('stopped', next), await fetchAs('stopped', old)]).toEqual([
      '404 not_sent',
      '401 not_enrolled',
    ]);
  });
});
