import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import type { TokenStore } from '../../core/enrolment/ports.ts';
import { revokeToken } from '../../core/enrolment/tokens.ts';
import { json, validate } from '../http.ts';
import { httpEdge } from '../http-edge.ts';
import { enrolmentProblem } from './enrol-problems.ts';
import { nodePath } from './token-issue.ts';

/** `DELETE /nodes/{node}/token` (operator): revokes the node's token unless it is spent. */
export function createTokenRevokeHandler(deps: { tokens: TokenStore; now?: () => Date }) {
  return middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(httpEdge({ mapError: enrolmentProblem }))
    .handler(async function revokeNodeToken(event) {
      const { node } = validate(nodePath, event.pathParameters ?? {}, 'path');
      return json(200, await revokeToken(node, deps));
    });
}
