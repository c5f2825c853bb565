import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateNodeKeys, type NodeKeys, signingKeyOf } from '../../lib/clients/host/keys.ts';
import { hostProof } from '../../lib/clients/host/proof.ts';
import { type RunningApi, startLocalApi } from '../../lib/local/http-server.ts';
import { localPartsFor } from '../../lib/local/parts.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import { presenterOf } from '../../lib/server/core/enrolment/keys.ts';
import { parseToken } from '../../lib/server/core/enrolment/token.ts';
import { routes } from '../../lib/server/functions/table.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import { provisionTestResources } from '../support/resources.ts';
import { enrolmentFixture } from './enrol-fixtures.ts';

let config: MeshConfig;
let api: RunningApi;
let fixture: ReturnType<typeof enrolmentFixture>;
const enrolled = new Map<string, NodeKeys>();

const hostRoutes = routes.filter((route) => route.auth === 'host');

async function enrolOverHttp(node: string): Promise<NodeKeys> {
  await fixture.addNode(node);
  const issued = await fetch(`${api.url}/nodes/${node}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  });
  const { token } = (await issued.json()) as { token: string };
  const { keys } = await generateNodeKeys();
  const answer = await fetch(`${api.url}/enrol`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      node,
      token,
      keys: { signing: keys.signing.publicJwk, sealing: keys.sealing.publicJwk },
    }),
  });
  expect(answer.status).toBe(200);
  return keys;
}

beforeAll(async () => {
  config = await provisionTestResources('hostauth');
  fixture = enrolmentFixture(config, makeDynamoDBClient(config));
  api = await startLocalApi({ port: 0, parts: localPartsFor(config) });
  enrolled.set('alpha', await enrolOverHttp('alpha'));
  enrolled.set('beta', await enrolOverHttp('beta'));
});

afterAll(async () => {
  await api?.stop();
});

const target = (path: string, node: string) => path.replace('{node}', node);
const body = (method: string) => (method === 'GET' ? undefined : '{}');

async function send(method: string, path: string, authorization?: string) {
  const response = await fetch(`${api.url}${path}`, {
    method,
    headers: {
      ...(authorization ? { authorization } : {}),
      ...(body(method) !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body(method) !== undefined ? { body: body(method) as string } : {}),
  });
  const text = await response.text();
  const code = text ? ((JSON.parse(text) as { error?: { code?: string } }).error?.code ?? 'ok') : 'ok';
  return { status: response.status, code };
}

async function proofBy(node: string, keys: NodeKeys, method: string, path: string, now?: Date) {
  return hostProof(
    signingKeyOf(node, keys),
    { method, url: `${api.url}${path}`, body: body(method) ?? '' },
    now ? { now: () => now } : {},
  );
}

describe.each(hostRoutes.map((route) => [`${route.method} ${route.path}`, route] as const))(
  'host route %s',
  (_, route) => {
    const path = target(route.path, 'alpha');

    it('answers 401 without a proof and with a malformed one', async () => {
      expect((await send(route.method, path)).status).toBe(401);
      expect((await send(route.method, path, 'MeshPoP not.a.jws')).status).toBe(401);
    });

    it('answers 401 to a proof by keys the node never enrolled', async () => {
      const { keys } = await generateNodeKeys();
      expect((await send(route.method, path, await proofBy('alpha', keys, route.method, path))).status).toBe(
        401,
      );
    });

    it('answers 403 to a valid proof by another node', async () => {
      const beta = enrolled.get('beta') as NodeKeys;
      const answer = await send(route.method, path, await proofBy('beta', beta, route.method, path));
      expect(answer).toEqual({ status: 403, code: 'wrong_node' });
    });

    it('accepts the node itself once, and answers 401 to the same proof replayed', async () => {
      const alpha = enrolled.get('alpha') as NodeKeys;
      const proof = await proofBy('alpha', alpha, route.method, path);

      const first = await send(route.method, path, proof);
      const replay = await send(route.method, path, proof);

      expect([401, 403]).not.toContain(first.status);
      expect(replay).toEqual({ status: 401, code: 'proof_replayed' });
    });

    it('answers 401 to a stale proof', async () => {
      const alpha = enrolled.get('alpha') as NodeKeys;
      const stale = await proofBy('alpha', alpha, route.method, path, new Date(Date.now() - 5 * 60_000));
      expect(await send(route.method, path, stale)).toEqual({ status: 401, code: 'proof_stale' });
    });
  },
);

describe('a node whose enrolment was interrupted before the spend', () => {
  it('is refused even though its keys are in the identity table', async () => {
    await fixture.addNode('gamma');
    const issued = await fetch(`${api.url}/nodes/gamma/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    const { token } = (await issued.json()) as { token: string };
    const { keys } = await generateNodeKeys();
    const presented = { signing: keys.signing.publicJwk, sealing: keys.sealing.publicJwk } as never;
    const { presenter, thumbprint } = await presenterOf(presented);
    const { tokenId, secretHash } = parseToken(token);
    await fixture.tokens.claim({
      node: 'gamma',
      tokenId,
      secretHash,
      presenter,
      nowMs: Date.now(),
      leaseUntilMs: Date.now() + 30_000,
    });
    await fixture.keys.putKeys({
      node: 'gamma',
      thumbprint,
      signingKey: keys.signing.publicJwk,
      sealingKey: keys.sealing.publicJwk,
      presenter,
      storedAt: new Date().toISOString(),
      tokenId,
    });
    const path = '/hosts/gamma/declaration';

    const answer = await send('GET', path, await proofBy('gamma', keys, 'GET', path));

    expect(answer).toEqual({ status: 401, code: 'not_enrolled' });
  });
});
