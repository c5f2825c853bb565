import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import * as z from 'zod';
import { checkReportSequence } from '../../core/control/bounds.ts';
import { ReportForAnotherNodeError } from '../../core/control/errors.ts';
import { envelope, reportFields, withReportRules } from '../../core/control/messages.ts';
import type { ControlSender } from '../../core/control/ports.ts';
import type { NodeCredentialReader, ProofReplayGuard } from '../../core/host-identity/ports.ts';
import { NotSentError } from '../../core/mesh/errors.ts';
import { nodeName } from '../../core/names.ts';
import type { Clock, Log } from '../../core/ports.ts';
import type { DeliveryReader } from '../../core/push/ports.ts';
import { signalHeader } from '../../core/signal/channel.ts';
import type { SignalChannels } from '../../core/signal/ports.ts';
import { actorOf } from '../caller.ts';
import { controlProblem } from '../control-problems.ts';
import {
  authenticatedHost,
  authenticatedNode,
  type HostAuthenticationOptions,
  hostAuthentication,
} from '../host-auth.ts';
import { etagMatches, header, json, parseBody, validate } from '../http.ts';
import { httpEdge, type Refusing } from '../http-edge.ts';
import { meshProblem } from '../mesh-problems.ts';
import type { Problem } from '../problem.ts';
import { queueOne } from './control.ts';

/** The host routes: every request proven by the node's enrolled key (lib/server/api/host-auth.ts). */
export type Proven = {
  readonly credentials: NodeCredentialReader;
  readonly replayGuard: ProofReplayGuard;
  readonly log?: Log;
  readonly now?: Clock;
};

export const provenRoute = (
  deps: Proven & Refusing,
  replay: HostAuthenticationOptions['replay'] = 'proof-id',
  mapError?: (error: unknown) => Problem | undefined,
) =>
  middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(
      httpEdge({
        log: deps.log,
        refusals: deps.refusals,
        mapError: (error) => mapError?.(error) ?? controlProblem(error),
      }),
    )
    .use(
      hostAuthentication({
        credentials: deps.credentials,
        replayGuard: deps.replayGuard,
        replay,
        ...(deps.now ? { now: deps.now } : {}),
      }),
    );

export type HostDeclarationAnswer = {
  readonly node: string;
  readonly revision: number;
  readonly digest: string;
  readonly sentAt: string;
  readonly declaration: unknown;
};

/**
 * `GET /hosts/{node}/declaration`: what the node was last sent. 200 with the declaration and
 * its ETag; 304 when If-None-Match names that ETag; 404 `not_sent` before the first push. Every
 * one of them says in `Mesh-Signal` where the host waits for its signal, when there is a broker.
 */
export const hostDeclarationHandler = (
  deps: { readonly deliveries: DeliveryReader; readonly signalChannel?: SignalChannels } & Proven,
) =>
  provenRoute(deps, 'proof-id', meshProblem).handler(async function fetchDeclaration(event) {
    const node = authenticatedNode(event);
    const channel = deps.signalChannel?.(node);
    const signal: Record<string, string> = channel ? { [signalHeader]: JSON.stringify(channel) } : {};
    const ifNoneMatch = header(event, 'if-none-match');
    // What the host has already is not read again: a declaration in parts is megabytes.
    const delivery = await deps.deliveries.readDelivery(node, {
      known: (etag) => etagMatches(ifNoneMatch, etag),
    });
    if (!delivery) throw new NotSentError(node, signal[signalHeader]);
    const headers = { etag: delivery.etag, 'cache-control': 'no-cache', ...signal };
    if (etagMatches(ifNoneMatch, delivery.etag)) {
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

export const reportRequest = withReportRules(reportFields.omit({ node: true }));
export const reportPath = z.object({ node: nodeName });

/**
 * `POST /hosts/{node}/reports`: a host's report, put on the control queue under
 * `report:<node>`. The deduplication id is the node and its sequence, so a host that sends the
 * same report again (its answer lost) queues it once. While the store is away the report still
 * reaches the queue, which holds it (see `proof-id-while-store-answers`). A sequence further
 * ahead of the clock than lib/server/core/control/bounds.ts allows is 422 `sequence_ahead`.
 */
export const hostReportHandler = (deps: { readonly sender: ControlSender } & Proven) =>
  provenRoute(deps, 'proof-id-while-store-answers').handler(async (event) => {
    const now = deps.now ?? (() => new Date());
    const { node } = validate(reportPath, event.pathParameters ?? {}, 'path');
    const host = authenticatedHost(event);
    if (host.node !== node) {
      throw new ReportForAnotherNodeError(node);
    }
    const body = { node, ...parseBody(event, reportRequest) };
    // Refused here so the host hears why; the consumer checks again, against whatever else queued it.
    checkReportSequence(body, now());
    // A revert is audited when recorded: its record names the key that sent it, as a rotation's does.
    const by = body.revert ? { ...actorOf(event), principal: `key:${host.thumbprint}` } : undefined;
    const queued = await queueOne(deps.sender, {
      message: envelope('report', body, now(), by),
      deduplicationId: `report-${node}-${body.sequence}`,
    });
    return json(202, { queued });
  });
