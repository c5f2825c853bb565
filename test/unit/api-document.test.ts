import { readFileSync } from 'node:fs';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { apiDocumentHandler } from '../../lib/server/api/handlers/api-document.ts';
import { routes } from '../../lib/server/functions/table.ts';

const checkedIn = JSON.parse(readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8')) as {
  paths: Record<string, Record<string, { security: unknown[]; 'x-mesh-auth': string }>>;
};
const handler = apiDocumentHandler();
const get = (headers: Record<string, string> = {}) =>
  handler(
    { httpMethod: 'GET', path: '/openapi.json', headers, body: null } as unknown as APIGatewayProxyEvent,
    {} as Context,
  ) as Promise<APIGatewayProxyResult>;

describe('GET /openapi.json', () => {
  it('is a route of the table, open, and in the document it serves', () => {
    expect(routes.find((route) => route.path === '/openapi.json')).toMatchObject({
      method: 'GET',
      auth: 'none',
    });
    expect(checkedIn.paths['/openapi.json']?.get).toMatchObject({ security: [], 'x-mesh-auth': 'none' });
  });

  it('answers docs/openapi.json with an ETag and five minutes of caching, and 304 to that ETag', async () => {
    const answer = await get();
    expect(answer.statusCode).toBe(200);
    expect(JSON.parse(answer.body)).toEqual(checkedIn);
    expect(answer.headers).toMatchObject({
      'content-type': 'application/json',
      'cache-control': 'public, max-age=300',
      etag: expect.stringMatching(/^"[\w-]{43}"$/),
    });
    const etag = String(answer.headers?.etag);
    expect((await get({ 'If-None-Match': `W/${etag}` })).statusCode).toBe(304);
    expect((await get({ 'if-none-match': '"another"' })).statusCode).toBe(200);
  });
});
