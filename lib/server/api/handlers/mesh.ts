import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import * as z from 'zod';
import { NodeNotFoundError, NotSentError } from '../../core/mesh/errors.ts';
import type { PushStore } from '../../core/mesh/ports.ts';
import type { MeshService } from '../../core/mesh/service.ts';
import { labels } from '../../core/mesh-file/schema.ts';
import { moduleName, nodeName, providerKind } from '../../core/names.ts';
import type { Log } from '../../core/ports.ts';
import { pushBodySchema, pushRequestSchema } from '../../core/push/flow-schemas.ts';
import type { DeliveryReader } from '../../core/push/ports.ts';
import type { Pushes } from '../../core/push/service.ts';
import type { ViewPages } from '../../core/views/view-pages.ts';
import type { MeshConfig } from '../../setup/config.ts';
import { actorOf } from '../caller.ts';
import { json, parseBody, timeToAnswer, validate } from '../http.ts';
import { httpEdge, type Refusing } from '../http-edge.ts';
import { meshProblem } from '../mesh-problems.ts';
import { nextOf, viewQueryOf } from '../view-query.ts';

/**
 * The mesh's operator handlers, one factory per function of lib/server/functions/mesh.ts; each
 * validates, makes one call and answers. Domain errors become answers in lib/server/api/mesh-problems.ts.
 */
type Handler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;
type Logged = { readonly log?: Log };
export type MeshChangeDeps = { readonly meshService: MeshService } & Logged;
export type MeshPushDeps = {
  readonly pushes: Pushes;
  readonly config: Pick<MeshConfig, 'pushWaitSeconds'>;
} & Logged;
export type MeshSentDeps = { readonly pushStore: PushStore; readonly deliveries: DeliveryReader } & Logged;
export type MeshPlanDeps = { readonly pushes: Pushes } & Logged;
export type MeshStatusDeps = { readonly viewPages: ViewPages } & Logged;

const edge = (parts: Logged & Refusing, handler: Handler) =>
  middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(httpEdge({ mapError: meshProblem, log: parts.log, refusals: parts.refusals }))
    .handler(handler);

export const nodeParams = z.object({ node: nodeName });
export const moduleParams = z.object({ node: nodeName, module: moduleName });
export const nodeAddBody = z.object({ node: nodeName, labels: labels.optional() }).strict();
export const assignBody = z.object({ provides: providerKind.optional() }).strict();
export const consumeBody = z
  .object({ provider: z.object({ node: nodeName, module: moduleName }).strict() })
  .strict();

/** POST /nodes */
export const meshNodeAddHandler = (parts: MeshChangeDeps) =>
  edge(parts, async (event) => {
    const { node, labels: given = {} } = parseBody(event, nodeAddBody);
    await parts.meshService.addNode(node, given, actorOf(event));
    return json(201, { node, labels: given });
  });

/** PUT /nodes/{node}/modules/{module} */
export const meshAssignHandler = (parts: MeshChangeDeps) =>
  edge(parts, async (event) => {
    const { node, module } = validate(moduleParams, event.pathParameters, 'path');
    const { provides } = parseBody(event, assignBody);
    await parts.meshService.assign(node, module, provides ?? null, actorOf(event));
    return json(201, { node, module, provides: provides ?? null });
  });

/** POST /nodes/{node}/modules/{module}/consumes */
export const meshConsumeHandler = (parts: MeshChangeDeps) =>
  edge(parts, async (event) => {
    const { node, module } = validate(moduleParams, event.pathParameters, 'path');
    const { provider } = parseBody(event, consumeBody);
    await parts.meshService.consume({ node, module }, provider, actorOf(event));
    return json(201, { consumer: { node, module }, provider });
  });

/** POST /push */
export const meshPushHandler = (parts: MeshPushDeps) =>
  edge(parts, async (event, context) => {
    const { wait = true, ...request } = parseBody(event, pushBodySchema);
    // As long as this request may still take (docs/decisions/push-without-polling.md).
    const cap = parts.config.pushWaitSeconds;
    const waitMs = wait
      ? Math.min(timeToAnswer(event, context), cap === undefined ? Infinity : cap * 1000)
      : 0;
    const started = await parts.pushes.push(request, actorOf(event), waitMs);
    const headers = { location: `/pushes/${started.id}`, 'mesh-push': started.id };
    if (started.state === 'running')
      return json(202, { push: started.id, state: 'running', follow: `/pushes/${started.id}` }, headers);
    return json(200, started.outcome, headers);
  });

/** POST /push/plan: what a push would send, each node with its changes; nothing is written. */
export const meshPushPlanHandler = (parts: MeshPlanDeps) =>
  edge(parts, async (event) => json(200, await parts.pushes.plan(parseBody(event, pushRequestSchema))));

/** GET /status */
export const meshStatusHandler = (parts: MeshStatusDeps) =>
  edge(parts, async (event) => {
    const query = viewQueryOf(event);
    const page = await parts.viewPages.statusPage(query);
    return json(200, { nodes: page.entries, ...nextOf(page.next, query.filter) });
  });

/** GET /nodes/{node}/declaration */
export const meshDeclarationHandler = (parts: MeshSentDeps) =>
  edge(parts, async (event) => {
    const { node } = validate(nodeParams, event.pathParameters, 'path');
    const delivery = await parts.deliveries.readDelivery(node);
    if (delivery) return json(200, delivery, { etag: delivery.etag });
    if (!(await parts.pushStore.readNode(node))) throw new NodeNotFoundError(node);
    throw new NotSentError(node);
  });
