import type { APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { hostAuthorizerHandler } from '../../lib/api/handlers/host-authorizer.ts';
import { generateNodeKeys, signingKeyOf } from '../../lib/host/keys.ts';
import { hostProof } from '../../lib/host/proof.ts';
import { InMemoryNodeCredentials } from '../support/node-credentials.ts';

const start = Date.parse('2026-10-01T12:00:00Z');
const api = 'https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com';

function declarationRequest(node: string, authorization: string): APIGatewayRequestAuthorizerEvent {
  return {
    type: 'REQUEST',
    methodArn: `arn:aws:execute-api:eu-west-1:123456789012:a1b2c3d4e5/v1/GET/hosts/${node}/declaration`,
    resource: '/hosts/{node}/declaration',
    path: `/hosts/${node}/declaration`,
    httpMethod: 'GET',
    headers: { Authorization: authorization },
    multiValueHeaders: null,
    pathParameters: { node },
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    stageVariables: null,
    requestContext: { path: `/v1/hosts/${node}/declaration` },
  } as unknown as APIGatewayRequestAuthorizerEvent;
}

/** The authorizer over a store that counts its reads, with a clock the test moves. */
async function setup() {
  const clock = { ms: start };
  const now = () => new Date(clock.ms);
  const store = new InMemoryNodeCredentials();
  const authorize = hostAuthorizerHandler({ credentials: store, now });
  const enrolled = await generateNodeKeys();
  store.enrol('alpha', enrolled.keys);
  const stranger = await generateNodeKeys();
  const proof = (keys: typeof enrolled.keys, node = 'alpha', path = `/v1/hosts/${node}/declaration`) =>
    hostProof(signingKeyOf(node, keys), { method: 'GET', url: `${api}${path}` }, { now });
  return { clock, store, authorize, enrolled: enrolled.keys, stranger: stranger.keys, proof };
}

/** Allow or Deny as the policy says, or the message of the refusal. */
const outcome = (answer: Promise<{ policyDocument: { Statement: Array<{ Effect?: string }> } }>) =>
  answer.then(
    (result): string => result.policyDocument.Statement[0]?.Effect ?? 'no statement',
    (error: Error) => error.message,
  );

describe('the host authorizer refuses cheaply', () => {
  it('reads the store once for a key no enrolment names, however many fresh proofs it signs', async () => {
    const { authorize, store, stranger, proof, clock } = await setup();

    const answers: string[] = [];
    for (let request = 0; request < 20; request += 1) {
      clock.ms += 500;
      answers.push(await outcome(authorize(declarationRequest('alpha', await proof(stranger)))));
    }

    expect(answers).toEqual(Array(20).fill('Unauthorized'));
    expect(store.reads).toBe(1);
  });

  it('reads nothing for a malformed, stale or misdirected proof', async () => {
    const { authorize, store, enrolled, proof, clock } = await setup();
    const stale = await proof(enrolled);
    clock.ms += 120_000;

    const answers = [
      await outcome(authorize(declarationRequest('alpha', 'MeshPoP not-a-jws'))),
      await outcome(authorize(declarationRequest('alpha', `MeshPoP ${'a'.repeat(40)}.${'b'.repeat(40)}.c`))),
      await outcome(authorize(declarationRequest('alpha', stale))),
      await outcome(authorize(declarationRequest('alpha', await proof(enrolled, 'alpha', '/v1/elsewhere')))),
    ];

    expect(answers).toEqual(Array(4).fill('Unauthorized'));
    expect(store.reads).toBe(0);
  });

  it('asks the store again once the refusal is old, and lets the key in if it is enrolled by then', async () => {
    const { authorize, store, stranger, proof, clock } = await setup();
    const refused = await outcome(authorize(declarationRequest('alpha', await proof(stranger))));
    store.enrol('alpha', stranger);
    clock.ms += 5_000;
    const stillRefused = await outcome(authorize(declarationRequest('alpha', await proof(stranger))));
    clock.ms += 15_000;
    const allowed = await outcome(authorize(declarationRequest('alpha', await proof(stranger))));

    expect([refused, stillRefused, allowed]).toEqual(['Unauthorized', 'Unauthorized', 'Allow']);
    expect(store.reads).toBe(2);
  });

  it('asks the store on every request of an enrolled key, so a revoked key is refused at once', async () => {
    const { authorize, store, enrolled, proof } = await setup();
    const before = await outcome(authorize(declarationRequest('alpha', await proof(enrolled))));
    store.enrolled.delete('alpha');
    const after = await outcome(authorize(declarationRequest('alpha', await proof(enrolled))));

    expect([before, after]).toEqual(['Allow', 'Unauthorized']);
    expect(store.reads).toBe(2);
  });

  it('remembers a bounded number of refused keys, forgetting the oldest first', async () => {
    const { store, proof, clock } = await setup();
    const authorize = hostAuthorizerHandler(
      { credentials: store, now: () => new Date(clock.ms) },
      { refusedKeysRemembered: 2 },
    );
    const keys = await Promise.all([1, 2, 3].map(async () => (await generateNodeKeys()).keys));
    for (const key of keys) await outcome(authorize(declarationRequest('alpha', await proof(key))));
    const readsAfterThree = store.reads;
    await outcome(authorize(declarationRequest('alpha', await proof(keys[2] as (typeof keys)[0]))));
    await outcome(authorize(declarationRequest('alpha', await proof(keys[0] as (typeof keys)[0]))));

    // the third is still remembered; the first was forgotten to make room
    expect([readsAfterThree, store.reads]).toEqual([3, 4]);
  });
});
