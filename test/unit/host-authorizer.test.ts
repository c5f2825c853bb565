import type { APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { generateNodeKeys, signingKeyOf } from '../../lib/clients/host/keys.ts';
import { hostProof } from '../../lib/clients/host/proof.ts';
import { hostAuthorizerHandler } from '../../lib/server/api/handlers/host-authorizer.ts';
import { RememberedCredentials } from '../../lib/server/core/host-identity/remembered-credentials.ts';
import { StoreUnavailableError } from '../../lib/server/core/unavailable.ts';
import { InMemoryNodeCredentials } from '../support/node-credentials.ts';

const start = Date.parse('2026-10-01T12:00:00Z');
const clock = { ms: start };
const now = () => new Date(clock.ms);
const methodArn = 'arn:aws:execute-api:eu-west-1:123456789012:a1b2c3d4e5/v1/GET/hosts/alpha/declaration';
const api = 'https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com';

/** A REQUEST authorizer event as API Gateway sends it for GET /v1/hosts/{node}/declaration. */
function authorizerEvent(node: string, authorization: string | undefined): APIGatewayRequestAuthorizerEvent {
  return {
    type: 'REQUEST',
    methodArn,
    resource: '/hosts/{node}/declaration',
    path: `/hosts/${node}/declaration`,
    httpMethod: 'GET',
    headers: authorization ? { Authorization: authorization } : {},
    multiValueHeaders: null,
    pathParameters: { node },
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    stageVariables: null,
    requestContext: { path: `/v1/hosts/${node}/declaration` },
  } as unknown as APIGatewayRequestAuthorizerEvent;
}

async function setup() {
  clock.ms = start;
  const credentials = new InMemoryNodeCredentials();
  const { keys } = await generateNodeKeys();
  credentials.enrol('alpha', keys);
  const key = signingKeyOf('alpha', keys);
  // The wiring's credentials remember completed enrolments; so do these.
  const remembered = new RememberedCredentials(credentials, { now: () => clock.ms });
  const authorize = hostAuthorizerHandler({ credentials: remembered, now });
  const proofFor = (node: string) =>
    hostProof(key, { method: 'GET', url: `${api}/v1/hosts/${node}/declaration` }, { now });
  return { credentials, authorize, proofFor };
}

describe('hostAuthorizerHandler', () => {
  it('allows a node on its own route, scoped to the method, and names the node', async () => {
    const { authorize, proofFor } = await setup();

    const result = await authorize(authorizerEvent('alpha', await proofFor('alpha')));

    expect(result).toEqual({
      principalId: 'alpha',
      policyDocument: {
        Version: '2012-10-17',
        Statement: [{ Action: 'execute-api:Invoke', Effect: 'Allow', Resource: methodArn }],
      },
      context: { node: 'alpha' },
    });
  });

  it('answers Unauthorized (401) without a proof, or with one made for another path', async () => {
    const { authorize, proofFor } = await setup();

    await expect(authorize(authorizerEvent('alpha', undefined))).rejects.toThrow(/^Unauthorized$/);
    await expect(authorize(authorizerEvent('alpha', await proofFor('beta')))).rejects.toThrow(
      /^Unauthorized$/,
    );
  });

  it('denies (403) a valid proof on another node route', async () => {
    const { authorize, credentials } = await setup();
    const { keys } = await generateNodeKeys();
    credentials.enrol('beta', keys);
    const beta = signingKeyOf('beta', keys);
    const proof = await hostProof(beta, { method: 'GET', url: `${api}/v1/hosts/alpha/declaration` }, { now });

    const result = await authorize(authorizerEvent('alpha', proof));

    expect(result.policyDocument.Statement[0]).toMatchObject({ Effect: 'Deny' });
  });

  it('rethrows a store that cannot be read, for the gateway to answer 503', async () => {
    const { authorize, proofFor, credentials } = await setup();
    credentials.unavailable = true;

    await expect(authorize(authorizerEvent('alpha', await proofFor('alpha')))).rejects.toBeInstanceOf(
      StoreUnavailableError,
    );
  });

  it('lets a node whose key it read lately through while the store is away, for five minutes', async () => {
    const { authorize, proofFor, credentials } = await setup();
    await authorize(authorizerEvent('alpha', await proofFor('alpha')));
    credentials.unavailable = true;
    clock.ms += 60_000;

    const whileAway = await authorize(authorizerEvent('alpha', await proofFor('alpha')));
    clock.ms += 300_000;
    const later = authorize(authorizerEvent('alpha', await proofFor('alpha')));

    expect(whileAway.policyDocument.Statement[0]).toMatchObject({ Effect: 'Allow' });
    // The store is asked every time; the remembered key stands in only while it is away.
    expect(credentials.reads).toBe(3);
    await expect(later).rejects.toBeInstanceOf(StoreUnavailableError);
  });
});

/** The authorizer over a store that counts its reads, with a clock the test moves. */
async function refusalSetup() {
  clock.ms = start;
  const store = new InMemoryNodeCredentials();
  const authorize = hostAuthorizerHandler({ credentials: store, now });
  const enrolled = await generateNodeKeys();
  store.enrol('alpha', enrolled.keys);
  const stranger = await generateNodeKeys();
  const proof = (keys: typeof enrolled.keys, node = 'alpha', path = `/v1/hosts/${node}/declaration`) =>
    hostProof(signingKeyOf(node, keys), { method: 'GET', url: `${api}${path}` }, { now });
  return { store, authorize, enrolled: enrolled.keys, stranger: stranger.keys, proof };
}

/** Allow or Deny as the policy says, or the message of the refusal. */
const outcome = (answer: Promise<{ policyDocument: { Statement: Array<{ Effect?: string }> } }>) =>
  answer.then(
    (result): string => result.policyDocument.Statement[0]?.Effect ?? 'no statement',
    (error: Error) => error.message,
  );

describe('the host authorizer refuses cheaply', () => {
  it('reads the store once for a key no enrolment names, however many fresh proofs it signs', async () => {
    const { authorize, store, stranger, proof } = await refusalSetup();

    const answers: string[] = [];
    for (let request = 0; request < 20; request += 1) {
      clock.ms += 500;
      answers.push(await outcome(authorize(authorizerEvent('alpha', await proof(stranger)))));
    }

    expect(answers).toEqual(Array(20).fill('Unauthorized'));
    expect(store.reads).toBe(1);
  });

  it('reads nothing for a malformed, stale or misdirected proof', async () => {
    const { authorize, store, enrolled, proof } = await refusalSetup();
    const stale = await proof(enrolled);
    clock.ms += 120_000;

    const answers = [
      await outcome(authorize(authorizerEvent('alpha', 'MeshPoP not-a-jws'))),
      await outcome(authorize(authorizerEvent('alpha', `MeshPoP ${'a'.repeat(40)}.${'b'.repeat(40)}.c`))),
      await outcome(authorize(authorizerEvent('alpha', stale))),
      await outcome(authorize(authorizerEvent('alpha', await proof(enrolled, 'alpha', '/v1/elsewhere')))),
    ];

    expect(answers).toEqual(Array(4).fill('Unauthorized'));
    expect(store.reads).toBe(0);
  });

  it('asks the store again once the refusal is old, and lets the key in if it is enrolled by then', async () => {
    const { authorize, store, stranger, proof } = await refusalSetup();
    const refused = await outcome(authorize(authorizerEvent('alpha', await proof(stranger))));
    store.enrol('alpha', stranger);
    clock.ms += 5_000;
    const stillRefused = await outcome(authorize(authorizerEvent('alpha', await proof(stranger))));
    clock.ms += 15_000;
    const allowed = await outcome(authorize(authorizerEvent('alpha', await proof(stranger))));

    expect([refused, stillRefused, allowed]).toEqual(['Unauthorized', 'Unauthorized', 'Allow']);
    expect(store.reads).toBe(2);
  });

  it('asks the store on every request of an enrolled key, so a revoked key is refused at once', async () => {
    const { authorize, store, enrolled, proof } = await refusalSetup();
    const before = await outcome(authorize(authorizerEvent('alpha', await proof(enrolled))));
    store.enrolled.delete('alpha');
    const after = await outcome(authorize(authorizerEvent('alpha', await proof(enrolled))));

    expect([before, after]).toEqual(['Allow', 'Unauthorized']);
    expect(store.reads).toBe(2);
  });

  it('remembers a bounded number of refused keys, forgetting the oldest first', async () => {
    const { store, proof } = await refusalSetup();
    const authorize = hostAuthorizerHandler({ credentials: store, now }, { refusedKeysRemembered: 2 });
    const keys = await Promise.all([1, 2, 3].map(async () => (await generateNodeKeys()).keys));
    for (const key of keys) await outcome(authorize(authorizerEvent('alpha', await proof(key))));
    const readsAfterThree = store.reads;
    await outcome(authorize(authorizerEvent('alpha', await proof(keys[2] as (typeof keys)[0]))));
    await outcome(authorize(authorizerEvent('alpha', await proof(keys[0] as (typeof keys)[0]))));

    // the third is still remembered; the first was forgotten to make room
    expect([readsAfterThree, store.reads]).toEqual([3, 4]);
  });
});
