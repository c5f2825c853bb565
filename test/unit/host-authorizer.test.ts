import type { APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { hostAuthorizerHandler } from '../../lib/api/handlers/host-authorizer.ts';
import { RememberedCredentials } from '../../lib/core/host-identity/remembered-credentials.ts';
import { StoreUnavailableError } from '../../lib/core/unavailable.ts';
import { generateNodeKeys, signingKeyOf } from '../../lib/host/keys.ts';
import { hostProof } from '../../lib/host/proof.ts';
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
