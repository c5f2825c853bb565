import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { Actor } from '../core/audit/record.ts';

/**
 * Who sent an operator request: the IAM principal API Gateway verified the SigV4 signature of,
 * or `local` on the local runtime, which authenticates no one (it listens on loopback only, and
 * takes requests from this machine's own clients only: lib/clients/http/loopback-guard.ts).
 */
export function callerOf(event: Pick<APIGatewayProxyEvent, 'requestContext'>): string {
  return event.requestContext?.identity?.userArn ?? 'local';
}

/**
 * The request as the audit trail names it (lib/server/core/audit/record.ts): the caller, the address
 * API Gateway saw (the socket's peer locally) and the request's id. The only place the core's
 * Actor is read out of an event; a host's acts are named by its key by the store that records them.
 */
export function actorOf(event: Pick<APIGatewayProxyEvent, 'requestContext'>): Actor {
  return {
    principal: callerOf(event),
    source: event.requestContext?.identity?.sourceIp ?? 'local',
    requestId: event.requestContext?.requestId ?? 'unknown',
  };
}
