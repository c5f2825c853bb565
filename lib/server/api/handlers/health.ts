import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import type { Log } from '../../core/ports.ts';
import { json } from '../http.ts';
import { httpEdge, type Refusing } from '../http-edge.ts';

/** GET /health: answers without asking any store, so it says only that the API is up. */
export const healthHandler = (parts: { readonly log?: Log } & Refusing = {}) =>
  middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(httpEdge({ log: parts.log, refusals: parts.refusals }))
    .handler(async () => json(200, { status: 'ok', service: 'mesh' }));
