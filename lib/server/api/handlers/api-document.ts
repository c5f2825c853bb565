import { createHash } from 'node:crypto';
import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import document from '../../../../docs/openapi.json' with { type: 'json' };
import type { Log } from '../../core/ports.ts';
import { etagMatches, header } from '../http.ts';
import { httpEdge, type Refusing } from '../http-edge.ts';

/** The document as it is sent, and its ETag: both fixed for as long as the function's code. */
const text = JSON.stringify(document);
const etag = `"${createHash('sha256').update(text).digest('base64url')}"`;

/**
 * A client may keep the document five minutes, then ask again with its ETag: a deployment
 * changes it, and a 304 costs no bytes.
 */
const headers = { etag, 'cache-control': 'public, max-age=300' };

/**
 * GET /openapi.json: the HTTP API as OpenAPI 3.1, docs/openapi.json as this code was built with
 * it (test/unit/openapi.test.ts holds that file to the route table). Open, as /health is: it says
 * nothing the published repository does not, and tools that cannot sign SigV4 read it.
 */
export const apiDocumentHandler = (parts: { readonly log?: Log } & Refusing = {}) =>
  middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(httpEdge({ log: parts.log, refusals: parts.refusals }))
    .handler(async (event) =>
      etagMatches(header(event, 'if-none-match'), etag)
        ? { statusCode: 304, headers, body: '' }
        : { statusCode: 200, headers: { 'content-type': 'application/json', ...headers }, body: text },
    );
