import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { isStoreUnreachable } from '../../adapters/dynamodb/identity-store-faults.ts';
import type { DeliveryReader } from '../../core/ports.ts';
import { authenticatedNode, type HostAuthenticationOptions, hostAuthentication } from '../host-auth.ts';
import { header, json } from '../http.ts';
import { httpEdge } from '../http-edge.ts';
import { Problem } from '../problem.ts';
import { storeUnavailable } from './enrol-problems.ts';

export type HostDeclarationAnswer = {
  readonly node: string;
  readonly revision: number;
  readonly digest: string;
  readonly sentAt: string;
  readonly declaration: unknown;
};

/**
 * `GET /hosts/{node}/declaration` (auth 'host'): what the node was last sent. 200 with the
 * declaration and its ETag; 304 when If-None-Match names that ETag; 404 `not_sent` before the
 * first push to the node.
 */
export function createHostDeclarationHandler(deps: {
  deliveries: DeliveryReader;
  hostAuthentication?: HostAuthenticationOptions;
}) {
  return middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(httpEdge({ mapError: (error) => (isStoreUnreachable(error) ? storeUnavailable(error) : undefined) }))
    .use(hostAuthentication(deps.hostAuthentication))
    .handler(async function fetchDeclaration(event) {
      const node = authenticatedNode(event);
      const delivery = await deps.deliveries.readDelivery(node);
      if (!delivery) throw new Problem(404, 'not_sent', `nothing was sent to ${node} yet; push it first`);
      const headers = { etag: delivery.etag, 'cache-control': 'no-cache' };
      if (matches(header(event, 'if-none-match'), delivery.etag)) {
        return { statusCode: 304, headers, body: '' };
      }
      const answer: HostDeclarationAnswer = {
        node: delivery.node,
        revision: delivery.revision,
        digest: delivery.digest,
        sentAt: delivery.sentAt,
        declaration: delivery.declaration,
      };
      return json(200, answer, headers);
    });
}

function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  const bare = (tag: string) => tag.trim().replace(/^W\//, '');
  return ifNoneMatch.split(',').some((tag) => tag.trim() === '*' || bare(tag) === bare(etag));
}
