import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import * as z from 'zod';
import { envelope } from '../../core/control/messages.ts';
import type { ControlSender } from '../../core/control/ports.ts';
import { enrol } from '../../core/enrolment/enrol.ts';
import { publicKeys } from '../../core/enrolment/keys.ts';
import type { HostIdentityRevocation, NodeKeyStore, TokenStore } from '../../core/enrolment/ports.ts';
import { defaultTokenTtl, tokenString, tokenTtl } from '../../core/enrolment/token.ts';
import { issueToken, revokeToken } from '../../core/enrolment/tokens.ts';
import type { EventSink } from '../../core/events/events.ts';
import { nodeName } from '../../core/names.ts';
import type { Clock, Log } from '../../core/ports.ts';
import type { SignalChannel } from '../../core/signal/channel.ts';
import type { RevocationSignal, SignalChannels } from '../../core/signal/ports.ts';
import { actorOf } from '../caller.ts';
import { enrolmentProblem } from '../enrolment-problems.ts';
import { json, parseBody, validate } from '../http.ts';
import { httpEdge, type Refusing } from '../http-edge.ts';
import { queueOne } from './control.ts';

/** The enrolment handlers: `POST /enrol` for hosts, token issue and revoke for operators. */
type Optional = { readonly log?: Log; readonly now?: Clock };
export type EnrolRouteDeps = {
  readonly tokens: TokenStore;
  readonly nodeKeys: NodeKeyStore;
  /** Where the completed enrolment is told, so the node's relations are minted to its key. */
  readonly sender: ControlSender;
  readonly signalChannel?: SignalChannels;
  readonly leaseSeconds?: number;
  /** Where `node.enrolled` is told (docs/events.md). */
  readonly events?: EventSink;
} & Optional;
export type TokenDeps = { readonly tokens: TokenStore } & Optional;
export type DisenrolDeps = {
  readonly hostIdentities: HostIdentityRevocation;
  /** Where the disenrolment is told, so the node's provisions are withdrawn from both sides. */
  readonly sender: ControlSender;
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

/** `POST /enrol` (auth 'token'): see lib/server/core/enrolment/enrol.ts for the protocol. */
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
        ...(deps.events ? { events: deps.events } : {}),
      },
    );
    // Told before the answer: a host that is not answered asks again, and is told again.
    await keysChanged(deps.sender, enrolled.node);
    const answer: EnrolAnswer = {
      node: enrolled.node,
      thumbprint: enrolled.thumbprint,
      enrolledAt: enrolled.enrolledAt,
      signal: deps.signalChannel?.(enrolled.node) ?? null,
    };
    return json(200, answer);
  });

/**
 * Puts `enrolled:<node>` on the control queue: the consumer mints the node's relations to its
 * keys, or withdraws them while it has none, and pushes (docs/decisions/sealed-secrets.md).
 */
export async function keysChanged(sender: ControlSender, node: string): Promise<void> {
  await queueOne(sender, { message: envelope('enrolled', { node }) });
}

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
    if (disenrolled.wasEnrolled) await keysChanged(deps.sender, node);
    return json(200, disenrolled);
  });
