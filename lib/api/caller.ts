import type { APIGatewayProxyEvent } from 'aws-lambda';

/**
 * Who sent an operator request: the IAM principal API Gateway verified the SigV4 signature of,
 * or `local` on the local runtime, which authenticates no one (it listens on loopback only).
 */
export function callerOf(event: Pick<APIGatewayProxyEvent, 'requestContext'>): string {
  return event.requestContext?.identity?.userArn ?? 'local';
}
