import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import * as z from 'zod';
import type { TokenStore } from '../../core/enrolment/ports.ts';
import { defaultTokenTtl, tokenTtl } from '../../core/enrolment/token.ts';
import { issueToken } from '../../core/enrolment/tokens.ts';
import { nodeName } from '../../core/names.ts';
import { json, parseBody, validate } from '../http.ts';
import { httpEdge } from '../http-edge.ts';
import { enrolmentProblem } from './enrol-problems.ts';

export const nodePath = z.object({ node: nodeName });
export const issueTokenBody = z.object({ ttl: tokenTtl.optional() }).strict();

/** `POST /nodes/{node}/token` (operator): issues the node's one live token; answers it once. */
export function createTokenIssueHandler(deps: { tokens: TokenStore; now?: () => Date }) {
  return middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(httpEdge({ mapError: enrolmentProblem }))
    .handler(async function issueNodeToken(event) {
      const { node } = validate(nodePath, event.pathParameters ?? {}, 'path');
      const { ttl } = parseBody(event, issueTokenBody);
      const issued = await issueToken(node, ttl ?? tokenTtl.parse(defaultTokenTtl), deps);
      // The token leaves the control plane here and only here; no-store keeps it out of caches.
      return json(201, issued, { 'cache-control': 'no-store' });
    });
}
