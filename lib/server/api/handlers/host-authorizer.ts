import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { HostIdentityError, WrongNodeError } from '../../core/host-identity/errors.ts';
import type { NodeCredentialReader } from '../../core/host-identity/ports.ts';
import { requestTarget } from '../../core/host-identity/proof.ts';
import { RefusedKeys } from '../../core/host-identity/refused-keys.ts';
import { verifyHostProof } from '../../core/host-identity/verify.ts';
import type { Clock } from '../../core/ports.ts';
import { queryPairs } from '../host-auth.ts';

/**
 * API Gateway's REQUEST authorizer for host routes: it turns away requests whose proof of
 * possession does not verify before a handler runs. It checks everything but the body hash
 * and the replay guard, which need the body and must be spent once: the handler's
 * hostAuthentication() middleware checks the whole proof again.
 *
 * Its credentials are the wiring's, which remember completed enrolments' keys as the handlers'
 * do (RememberedCredentials), so a host whose key was read lately still gets through to its
 * route while the store is away; there its report reaches the queue, which holds it (see
 * lib/server/api/host-auth.ts).
 *
 * Refusing is cheap: a malformed, stale or misdirected proof is refused before any read, and a
 * key the store said no completed enrolment names is refused again without a read for a while
 * (RefusedKeys, one memory per instance). API Gateway caches its answers by the proof, which is
 * single-use: see lib/deploy/api.ts.
 *
 * Answers: Allow (with the node in the context); "Unauthorized" (401) for a missing, bad or
 * stale proof; Deny (403) for a valid proof on another node's route. A store that cannot be
 * read for a key not remembered is rethrown; API Gateway answers a throwing authorizer with
 * AUTHORIZER_CONFIGURATION_ERROR, which lib/deploy/api.ts maps to 503 `try_again`.
 */
export function hostAuthorizerHandler(
  deps: { readonly credentials: NodeCredentialReader; readonly now?: Clock },
  options: { readonly refusedKeysRemembered?: number } = {},
) {
  const now = deps.now ?? (() => new Date());
  const credentials = new RefusedKeys(deps.credentials, {
    now: () => now().getTime(),
    ...(options.refusedKeysRemembered !== undefined ? { capacity: options.refusedKeysRemembered } : {}),
  });
  return async function authorizeHost(
    event: APIGatewayRequestAuthorizerEvent,
  ): Promise<APIGatewayAuthorizerResult> {
    try {
      const verified = await verifyHostProof(
        {
          authorization: headerOf(event, 'authorization'),
          method: event.httpMethod,
          target: requestTarget(event.requestContext?.path || event.path, queryPairs(event)),
          ...(event.pathParameters?.node !== undefined ? { routeNode: event.pathParameters.node } : {}),
        },
        { credentials, now },
      );
      return policy(verified.node, 'Allow', event.methodArn, { node: verified.node });
    } catch (error) {
      if (error instanceof WrongNodeError) return policy(error.node, 'Deny', event.methodArn);
      if (error instanceof HostIdentityError) throw new Error('Unauthorized');
      throw error;
    }
  };
}

function headerOf(event: APIGatewayRequestAuthorizerEvent, name: string): string | undefined {
  const entry = Object.entries(event.headers ?? {}).find(([key]) => key.toLowerCase() === name);
  return entry?.[1];
}

function policy(
  principalId: string,
  effect: 'Allow' | 'Deny',
  methodArn: string,
  context?: Record<string, string>,
): APIGatewayAuthorizerResult {
  return {
    principalId,
    policyDocument: {
      Version: '2012-10-17',
      Statement: [{ Action: 'execute-api:Invoke', Effect: effect, Resource: methodArn }],
    },
    ...(context ? { context } : {}),
  };
}
