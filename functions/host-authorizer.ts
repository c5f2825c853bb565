import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { makeDynamoDBClient } from '../lib/adapters/aws-clients.ts';
import { DynamoDBNodeCredentialReader } from '../lib/adapters/dynamodb/identity-credentials.ts';
import { queryPairs } from '../lib/api/host-auth.ts';
import { readConfig } from '../lib/config.ts';
import { HostIdentityError, WrongNodeError } from '../lib/core/host-identity/errors.ts';
import type { NodeCredentialReader } from '../lib/core/host-identity/ports.ts';
import { requestTarget } from '../lib/core/host-identity/proof.ts';
import { verifyHostProof } from '../lib/core/host-identity/verify.ts';

export type HostAuthorizerDeps = {
  readonly credentials: NodeCredentialReader;
  readonly now?: () => Date;
};

/**
 * API Gateway's REQUEST authorizer for host routes: it turns away requests whose proof of
 * possession does not verify before a handler runs. It checks everything but the body hash
 * and the replay guard, which need the body and must be spent once: the handler's
 * hostAuthentication() middleware checks the whole proof again.
 *
 * Answers: Allow (with the node in the context); "Unauthorized" (401) for a missing, bad or
 * stale proof; Deny (403) for a valid proof on another node's route. A store that cannot be
 * read is rethrown, which API Gateway answers with its AUTHORIZER_FAILURE response (503 there).
 */
export function createHostAuthorizer(deps: () => HostAuthorizerDeps) {
  return async function authorizeHost(
    event: APIGatewayRequestAuthorizerEvent,
  ): Promise<APIGatewayAuthorizerResult> {
    const { credentials, now } = deps();
    try {
      const verified = await verifyHostProof(
        {
          authorization: headerOf(event, 'authorization'),
          method: event.httpMethod,
          target: requestTarget(event.requestContext?.path || event.path, queryPairs(event)),
          ...(event.pathParameters?.node !== undefined ? { routeNode: event.pathParameters.node } : {}),
        },
        { credentials, ...(now ? { now } : {}) },
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

let production: HostAuthorizerDeps | undefined;

export const handler = createHostAuthorizer(() => {
  if (!production) {
    const config = readConfig();
    production = {
      credentials: new DynamoDBNodeCredentialReader({
        client: makeDynamoDBClient(config),
        identityTable: config.identityTable,
        inventoryTable: config.inventoryTable,
      }),
    };
  }
  return production;
});
