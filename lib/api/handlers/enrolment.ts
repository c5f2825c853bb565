import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import * as z from 'zod';
import { enrol } from '../../core/enrolment/enrol.ts';
import { publicKeys } from '../../core/enrolment/keys.ts';
import type { HostIdentityRevocation, NodeKeyStore, TokenStore } from '../../core/enrolment/ports.ts';
import { defaultTokenTtl, tokenString, tokenTtl } from '../../core/enrolment/token.ts';
import { issueToken, revokeToken } from '../../core/enrolment/tokens.ts';
import { nodeName } from '../../core/names.ts';
import type { Clock, Log } from '../../core/ports.ts';
import type { SignalChannel } from '../../core/signal/channel.ts';
import type { RevocationSignal, SignalChannels } from '../../core/signal/ports.ts';
import { actorOf } from '../caller.ts';
import { json, parseBody, validate } from '../http.ts';
import { httpEdge, type Refusing } from '../http-edge.ts';
import { enrolmentProblem } from '../problems/enrolment.ts';

/** The enrolment handlers: `POST /enrol` for hosts, token issue and revoke for operators. */
type Optional = { readonly log?: Log; readonly now?: Clock };
export type EnrolRouteDeps = {
  readonly tokens: TokenStore;
  readonly nodeKeys: NodeKeyStore;
  readonly signalChannel?: SignalChannels;
  readonly leaseSeconds?: number;
} & Optional;
export type TokenDeps = { readonly tokens: TokenStore } & Optional;
export type DisenrolDeps = {
  readonly hostIdentities: HostIdentityRevocation;
  readonly signals: RevocationSignal;
} & Optional;
type Handler = (event: APIGatewayProxyEvent) => Promise<APIGatewayProxyResult>;

const edge = (deps: Optional & Refusing, handler: Handler) =>
  middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(httpEdge({ mapError: enrolmentProblem, log: deps.log, refusals: deps.refusals }))
    .handler(handler);

export const enrolBody = z.object({ node: nodeName, token: tokenString, keys: publicKeys }).strict();
export type EnrolBody = z.infer<typeof enrolBody>;

/**
 * The answer to a successful enrolment; the same for a presenter asking again after the spend.
 * `signal` says where the host waits for its signal (null when the control plane has no broker).
 */
export type EnrolAnswer = {
  readonly node: string;
  readonly thumbprint: string;
  readonly enrolledAt: string;
  readonly signal: SignalChannel | null;
};

export const nodePath = z.object({ node: nodeName });
export const issueTokenBody = z.object({ ttl: tokenTtl.optional() }).strict();

/** `POST /enrol` (auth 'token'): see lib/core/enrolment/enrol.ts for the protocol. */
export const enrolHandler = (deps: EnrolRouteDeps) =>
  edge(deps, async (event) => {
    const body = parseBody(event, enrolBody);
    const enrolled = await enrol(
      { ...body, by: actorOf(event) },
      {
        tokens: deps.tokens,
        keys: deps.nodeKeys,
        ...(deps.now ? { now: deps.now } : {}),
        ...(deps.leaseSeconds !== undefined ? { leaseSeconds: deps.leaseSeconds } : {}),
      },
    );
    const answer: EnrolAnswer = {
      node: enrolled.node,
      thumbprint: enrolled.thumbprint,
      enrolledAt: enrolled.enrolledAt,
      signal: deps.signalChannel?.(enrolled.node) ?? null,
    };
    return json(200, answer);
  });

/** `POST /nodes/{node}/token` (operator): issues the node's one live token; answers it once. */
export const tokenIssueHandler = (deps: TokenDeps) =>
  edge(deps, async (event) => {
    const { node } = validate(nodePath, event.pathParameters ?? {}, 'path');
    const { ttl } = parseBody(event, issueTokenBody);
    const issued = await issueToken(node, ttl ?? tokenTtl.parse(defaultTokenTtl), deps, actorOf(event));
    // The token leaves the control plane here and only here; no-store keeps it out of caches.
    return json(201, issued, { 'cache-control': 'no-store' });
  });

/** `DELETE /nodes/{node}/token` (operator): revokes the node's token unless it is spent. */
export const tokenRevokeHandler = (deps: TokenDeps) =>
  edge(deps, async (event) => {
    const { node } = validate(nodePath, event.pathParameters ?? {}, 'path');
    return json(200, await revokeToken(node, deps, actorOf(event)));
  });

/** `DELETE /nodes/{node}/enrolment` (operator): revokes the node's host identity; the node stays. */
export const nodeDisenrolHandler = (deps: DisenrolDeps) =>
  edge(deps, async (event) => {
    const { node } = validate(nodePath, event.pathParameters ?? {}, 'path');
    const disenrolled = await deps.hostIdentities.disenrol(node, actorOf(event));
    await deps.signals.revoked(node);
    return json(200, disenrolled);
  });
