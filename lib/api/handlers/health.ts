import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import type { Log } from '../../core/ports.ts';
import { json } from '../http.ts';
import { httpEdge } from '../http-edge.ts';

/** GET /health: answers without asking any store, so it says only that the API is up. */
export const healthHandler = (parts: { readonly log?: Log } = {}) =>
  middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(httpEdge({ log: parts.log }))
    .handler(async () => json(200, { status: 'ok', service: 'mesh' }));
