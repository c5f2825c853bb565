import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { generateNodeKeys, signingKeyOf } from '../../lib/clients/host/keys.ts';
import { hostProof } from '../../lib/clients/host/proof.ts';
import { authenticatedNode, hostAuthentication } from '../../lib/server/api/host-auth.ts';
import { json } from '../../lib/server/api/http.ts';
import { httpEdge } from '../../lib/server/api/http-edge.ts';
import { InMemoryNodeCredentials, InMemoryReplayGuard } from '../support/node-credentials.ts';

const now = new Date('2026-10-01T12:00:00Z');
const base = 'https://api.example.test';

function event(
  method: string,
  path: string,
  options: { authorization?: string; body?: string; stage?: string } = {},
) {
  const url = new URL(path, base);
  const node = /\/hosts\/([^/]+)\//.exec(url.pathname)?.[1];
  const query = Object.fromEntries(url.searchParams);
  return {
    httpMethod: method,
    path: url.pathname,
    resource: '/hosts/{node}/declaration',
    headers: options.authorization ? { Authorization: options.authorization } : {},
    multiValueHeaders: {},
    pathParameters: node ? { node } : null,
    queryStringParameters: url.search ? query : null,
    multiValueQueryStringParameters: url.search
      ? Object.fromEntries(Object.entries(query).map(([k, v]) => [k, [v]]))
      : null,
    stageVariables: null,
    body: options.body ?? null,
    isBase64Encoded: false,
    requestContext: { path: options.stage ? `/${options.stage}${url.pathname}` : url.pathname },
  } as unknown as APIGatewayProxyEvent;
}

async function setup() {
  const credentials = new InMemoryNodeCredentials();
  const replayGuard = new InMemoryReplayGuard();
  const enrol = async (node: string) => {
    const { keys } = await generateNodeKeys();
    credentials.enrol(node, keys);
    return signingKeyOf(node, keys);
  };
  const handler = middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(httpEdge())
    .use(hostAuthentication({ credentials, replayGuard, now: () => now }))
    .handler(async (request) => json(200, { node: authenticatedNode(request) }));
  const call = (e: APIGatewayProxyEvent) => handler(e, {} as Context);
  return { credentials, replayGuard, enrol, call };
}

const errorCode = (result: APIGatewayProxyResult) =>
  (JSON.parse(result.body) as { error: { code: string } }).error.code;

describe('hostAuthentication', () => {
  it('accepts a proof by the node on its own route and names the node', async () => {
    const { enrol, call } = await setup();
    const key = await enrol('alpha');
    const authorization = await hostProof(
      key,
      { method: 'GET', url: `${base}/hosts/alpha/declaration` },
      { now: () => now },
    );

    const result = await call(event('GET', '/hosts/alpha/declaration', { authorization }));

    expect(result.statusCode).toBe(200);
    expect(JSON.parse(result.body)).toEqual({ node: 'alpha' });
  });

  it('binds the path as requested, stage prefix included, and the query in any order', async () => {
    const { enrol, call } = await setup();
    const key = await enrol('alpha');
    const authorization = await hostProof(
      key,
      { method: 'GET', url: `${base}/prod/hosts/alpha/declaration?b=2&a=1` },
      { now: () => now },
    );

    const result = await call(
      event('GET', '/hosts/alpha/declaration?a=1&b=2', { authorization, stage: 'prod' }),
    );

    expect(result.statusCode).toBe(200);
  });

  it('answers 401 without a proof', async () => {
    const { call } = await setup();
    const result = await call(event('GET', '/hosts/alpha/declaration'));
    expect(result.statusCode).toBe(401);
    expect(errorCode(result)).toBe('proof_missing');
    expect(result.headers?.['www-authenticate']).toContain('MeshPoP');
  });

  it('answers 401 to a proof signed by another key than the enrolled one', async () => {
    const { enrol, call } = await setup();
    await enrol('alpha');
    const { keys: stranger } = await generateNodeKeys();
    const forged = { ...signingKeyOf('alpha', stranger), thumbprint: (await enrol('beta')).thumbprint };
    const authorization = await hostProof(
      forged,
      { method: 'GET', url: `${base}/hosts/alpha/declaration` },
      { now: () => now },
    );

    const result = await call(event('GET', '/hosts/alpha/declaration', { authorization }));

    expect(result.statusCode).toBe(401);
  });

  it('answers 401 to a node whose keys are stored but whose enrolment was never spent', async () => {
    const { credentials, call } = await setup();
    const { keys } = await generateNodeKeys();
    credentials.keys.set('alpha', keys);
    const authorization = await hostProof(
      signingKeyOf('alpha', keys),
      { method: 'GET', url: `${base}/hosts/alpha/declaration` },
      { now: () => now },
    );

    const result = await call(event('GET', '/hosts/alpha/declaration', { authorization }));

    expect(result.statusCode).toBe(401);
    expect(errorCode(result)).toBe('not_enrolled');
  });

  it('answers 401 to a stale proof and to one from too far in the future', async () => {
    const { enrol, call } = await setup();
    const key = await enrol('alpha');
    const url = `${base}/hosts/alpha/declaration`;
    const old = await hostProof(key, { method: 'GET', url }, { now: () => new Date(now.getTime() - 61_000) });
    const future = await hostProof(
      key,
      { method: 'GET', url },
      { now: () => new Date(now.getTime() + 61_000) },
    );

    const results = [
      await call(event('GET', '/hosts/alpha/declaration', { authorization: old })),
      await call(event('GET', '/hosts/alpha/declaration', { authorization: future })),
    ];

    expect(results.map((r) => [r.statusCode, errorCode(r)])).toEqual([
      [401, 'proof_stale'],
      [401, 'proof_stale'],
    ]);
  });

  it('answers 401 to a replayed proof', async () => {
    const { enrol, call } = await setup();
    const key = await enrol('alpha');
    const authorization = await hostProof(
      key,
      { method: 'GET', url: `${base}/hosts/alpha/declaration` },
      { now: () => now },
    );

    const first = await call(event('GET', '/hosts/alpha/declaration', { authorization }));
    const replay = await call(event('GET', '/hosts/alpha/declaration', { authorization }));

    expect(first.statusCode).toBe(200);
    expect([replay.statusCode, errorCode(replay)]).toEqual([401, 'proof_replayed']);
  });

  it('answers 401 when the proof signs another method, URL or body', async () => {
    const { enrol, call } = await setup();
    const key = await enrol('alpha');
    const url = `${base}/hosts/alpha/reports`;
    const signed = await hostProof(key, { method: 'POST', url, body: '{"a":1}' }, { now: () => now });

    const results = [
      await call(event('PUT', '/hosts/alpha/reports', { authorization: signed, body: '{"a":1}' })),
      await call(event('POST', '/hosts/alpha/declaration', { authorization: signed, body: '{"a":1}' })),
      await call(event('POST', '/hosts/alpha/reports', { authorization: signed, body: '{"a":2}' })),
    ];

    expect(results.map((r) => [r.statusCode, errorCode(r)])).toEqual([
      [401, 'proof_mismatch'],
      [401, 'proof_mismatch'],
      [401, 'proof_mismatch'],
    ]);
  });

  it('answers 403 to a valid proof by node A on a route about node B', async () => {
    const { enrol, call } = await setup();
    const alpha = await enrol('alpha');
    await enrol('beta');
    const authorization = await hostProof(
      alpha,
      { method: 'GET', url: `${base}/hosts/beta/declaration` },
      { now: () => now },
    );

    const result = await call(event('GET', '/hosts/beta/declaration', { authorization }));

    expect([result.statusCode, errorCode(result)]).toEqual([403, 'wrong_node']);
  });
});
