import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { generateNodeKeys, type NodeKeys, signingKeyOf } from '../../lib/clients/host/keys.ts';
import { hostProof } from '../../lib/clients/host/proof.ts';
import {
  authenticatedNode,
  type HostAuthenticationOptions,
  hostAuthentication,
} from '../../lib/server/api/host-auth.ts';
import { json } from '../../lib/server/api/http.ts';
import { httpEdge } from '../../lib/server/api/http-edge.ts';
import { RememberedCredentials } from '../../lib/server/core/host-identity/remembered-credentials.ts';
import { StoreUnavailableError } from '../../lib/server/core/unavailable.ts';
import { InMemoryNodeCredentials, InMemoryReplayGuard } from '../support/node-credentials.ts';

const now = new Date('2026-10-01T12:00:00Z');

async function route(options: HostAuthenticationOptions, keys: NodeKeys) {
  const handler = middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(httpEdge())
    .use(hostAuthentication({ ...options, now: () => now }))
    .handler(async (event) => json(202, { node: authenticatedNode(event) }));
  const proof = () =>
    hostProof(
      signingKeyOf('alpha', keys),
      { method: 'POST', url: 'https://api.test/hosts/alpha/reports', body: '{}' },
      {
        now: () => now,
      },
    );
  const send = async (authorization: string) => {
    const event = {
      httpMethod: 'POST',
      path: '/hosts/alpha/reports',
      headers: { authorization },
      pathParameters: { node: 'alpha' },
      queryStringParameters: null,
      multiValueQueryStringParameters: null,
      body: '{}',
      isBase64Encoded: false,
      requestContext: { path: '/hosts/alpha/reports' },
    } as unknown as APIGatewayProxyEvent;
    const result = await handler(event, {} as Context);
    return {
      status: result.statusCode,
      code: (JSON.parse(result.body) as { error?: { code: string } }).error?.code,
    };
  };
  return { proof, send };
}

describe('host authentication while the store is away', () => {
  it('refuses a replayed proof while the store answers, on either setting', async () => {
    const { keys } = await generateNodeKeys();
    for (const replay of ['proof-id', 'proof-id-while-store-answers'] as const) {
      const { proof, send } = await route(
        {
          credentials: new InMemoryNodeCredentials().enrol('alpha', keys),
          replayGuard: new InMemoryReplayGuard(),
          replay,
        },
        keys,
      );
      const once = await proof();

      expect((await send(once)).status).toBe(202);
      expect(await send(once)).toEqual({ status: 401, code: 'proof_replayed' });
    }
  });

  it('answers "try again" when proof ids cannot be remembered, by default', async () => {
    const { keys } = await generateNodeKeys();
    const replayGuard = new InMemoryReplayGuard();
    const { proof, send } = await route(
      { credentials: new InMemoryNodeCredentials().enrol('alpha', keys), replayGuard },
      keys,
    );
    replayGuard.unavailable = true;

    expect(await send(await proof())).toEqual({ status: 503, code: 'try_again' });
  });

  it('lets a route whose body protects itself go on with a remembered credential', async () => {
    const { keys } = await generateNodeKeys();
    const store = new InMemoryNodeCredentials().enrol('alpha', keys);
    const replayGuard = new InMemoryReplayGuard();
    const credentials = new RememberedCredentials(store);
    const { proof, send } = await route(
      { credentials, replayGuard, replay: 'proof-id-while-store-answers' },
      keys,
    );
    expect((await send(await proof())).status).toBe(202);

    store.unavailable = true;
    replayGuard.unavailable = true;

    expect(await send(await proof())).toEqual({ status: 202, code: undefined });
    // Asked first; answered from memory only because the store refused.
    expect(store.reads).toBe(2);
  });
});

describe('RememberedCredentials', () => {
  it('asks the store every time, and stands in for it only while it is away, until its time is up', async () => {
    const { keys } = await generateNodeKeys();
    const store = new InMemoryNodeCredentials().enrol('alpha', keys);
    let clock = 0;
    const remembered = new RememberedCredentials(store, { ttlMs: 1_000, now: () => clock });

    await remembered.readCredential('alpha', keys.thumbprint);
    await remembered.readCredential('alpha', keys.thumbprint);
    store.unavailable = true;
    clock = 999;
    const whileAway = await remembered.readCredential('alpha', keys.thumbprint);
    clock = 1_000;
    const tooLate = remembered.readCredential('alpha', keys.thumbprint);

    expect(store.reads).toBe(4);
    expect(whileAway.enrolledThumbprint).toBe(keys.thumbprint);
    await expect(tooLate).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it('refuses a key at once when its enrolment is revoked while the store answers', async () => {
    const { keys } = await generateNodeKeys();
    const store = new InMemoryNodeCredentials().enrol('alpha', keys);
    const remembered = new RememberedCredentials(store);
    await remembered.readCredential('alpha', keys.thumbprint);

    store.enrolled.delete('alpha');
    const revoked = await remembered.readCredential('alpha', keys.thumbprint);
    store.unavailable = true;
    const whileAway = remembered.readCredential('alpha', keys.thumbprint);

    expect(revoked.enrolledThumbprint).toBeUndefined();
    await expect(whileAway).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it('never remembers a key whose enrolment is not complete', async () => {
    const { keys } = await generateNodeKeys();
    const store = new InMemoryNodeCredentials().enrol('alpha', keys, { spent: false });
    const remembered = new RememberedCredentials(store);

    await remembered.readCredential('alpha', keys.thumbprint);
    store.enrolled.set('alpha', keys.thumbprint);
    const credential = await remembered.readCredential('alpha', keys.thumbprint);

    expect(store.reads).toBe(2);
    expect(credential.enrolledThumbprint).toBe(keys.thumbprint);
  });
});
