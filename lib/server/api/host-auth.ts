import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import type { NodeCredentialReader, ProofReplayGuard } from '../core/host-identity/ports.ts';
import { requestTarget } from '../core/host-identity/proof.ts';
import { verifyHostProof } from '../core/host-identity/verify.ts';
import { StoreUnavailableError } from '../core/unavailable.ts';
import { hostIdentityProblem } from './host-identity-problems.ts';
import { header } from './http.ts';

export type HostAuthenticationOptions = {
  /** The node keys and completed enrolments; the wiring's remembers them (RememberedCredentials). */
  readonly credentials: NodeCredentialReader;
  readonly replayGuard: ProofReplayGuard;
  readonly now?: () => Date;
  /** @default 60 */
  readonly maxSkewSeconds?: number;
  /** The path parameter naming the node a route is about. @default 'node' */
  readonly nodeParameter?: string;
  /**
   * `proof-id`: every proof id is remembered in the store and used once, and a store that
   * cannot be asked is a "try again". `proof-id-while-store-answers`: the same while the store
   * answers; while it is away the route's body protects itself instead — a report's sequence
   * only grows and the older report loses, so a replay changes nothing — and the request goes
   * on, so a host's report reaches the queue (which holds it) rather than being turned away.
   * @default 'proof-id'
   */
  readonly replay?: 'proof-id' | 'proof-id-while-store-answers';
};

const authenticated = new WeakMap<object, { readonly node: string; readonly thumbprint: string }>();

/**
 * middy middleware for every host route: verifies the request's proof-of-possession (see
 * lib/server/core/host-identity/proof.ts) against the node's enrolled key and refuses with the answers
 * of lib/server/api/host-identity-problems.ts; a store that cannot be asked goes on to the edge as
 * "try again". Use it after `httpEdge()`, so its refusals become responses there.
 *
 * The URL bound is the path the host requested, `event.requestContext.path` (API Gateway
 * includes the stage prefix there, as the host sent it), else `event.path`, plus the query.
 */
export function hostAuthentication(
  options: HostAuthenticationOptions,
): MiddlewareObj<APIGatewayProxyEvent, APIGatewayProxyResult> {
  const replayGuard = replayGuardFor(options);
  return {
    before: async function verifyHostRequest(request) {
      const event = request.event;
      const verified = await verifyHostProof(
        {
          authorization: header(event, 'authorization'),
          method: event.httpMethod,
          target: requestTarget(requestedPath(event), queryPairs(event)),
          body: rawBody(event),
          ...routeNode(event, options.nodeParameter ?? 'node'),
        },
        {
          credentials: options.credentials,
          replayGuard,
          ...(options.now ? { now: options.now } : {}),
          ...(options.maxSkewSeconds !== undefined ? { maxSkewSeconds: options.maxSkewSeconds } : {}),
        },
      ).catch((error: unknown) => {
        throw hostIdentityProblem(error) ?? error;
      });
      authenticated.set(event, { node: verified.node, thumbprint: verified.thumbprint });
    },
  };
}

/** The node that signed this request; only valid behind hostAuthentication(). */
export function authenticatedNode(event: APIGatewayProxyEvent): string {
  return authenticatedHost(event).node;
}

/** The node that signed this request and the thumbprint of the key it signed with. */
export function authenticatedHost(event: APIGatewayProxyEvent): { node: string; thumbprint: string } {
  const host = authenticated.get(event);
  if (host === undefined)
    throw new Error('authenticatedHost() called on a request hostAuthentication() did not verify');
  return host;
}

function replayGuardFor(options: HostAuthenticationOptions): ProofReplayGuard {
  const guard = options.replayGuard;
  if (options.replay !== 'proof-id-while-store-answers') return guard;
  return {
    rememberOnce: async (node, jti, forgetAfter) => {
      try {
        return await guard.rememberOnce(node, jti, forgetAfter);
      } catch (error) {
        if (error instanceof StoreUnavailableError) return true;
        throw error;
      }
    },
  };
}

function requestedPath(event: Pick<APIGatewayProxyEvent, 'path' | 'requestContext'>): string {
  return event.requestContext?.path || event.path;
}

export function queryPairs(
  event: Pick<APIGatewayProxyEvent, 'multiValueQueryStringParameters' | 'queryStringParameters'>,
): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  if (event.multiValueQueryStringParameters) {
    for (const [name, values] of Object.entries(event.multiValueQueryStringParameters))
      for (const value of values ?? []) pairs.push([name, value]);
  } else if (event.queryStringParameters) {
    for (const [name, value] of Object.entries(event.queryStringParameters))
      if (value !== undefined) pairs.push([name, value]);
  }
  return pairs;
}

function rawBody(event: APIGatewayProxyEvent): Uint8Array | string {
  if (event.body === null || event.body === undefined) return '';
  return event.isBase64Encoded ? Buffer.from(event.body, 'base64') : event.body;
}

function routeNode(event: APIGatewayProxyEvent, parameter: string): { routeNode?: string } {
  const value = event.pathParameters?.[parameter];
  return value === undefined ? {} : { routeNode: value };
}
