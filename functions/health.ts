import middy from '@middy/core';
import { json } from '../lib/api/http.ts';
import { httpEdge } from '../lib/api/http-edge.ts';

export const handler = middy()
  .use(httpEdge())
  .handler(async () => json(200, { status: 'ok', service: 'mesh' }));
