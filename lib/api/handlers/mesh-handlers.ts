import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import * as z from 'zod';
import { NodeNotFoundError } from '../../core/mesh/errors.ts';
import { pushRequestSchema } from '../../core/mesh/push-steps.ts';
import { moduleName, nodeName } from '../../core/names.ts';
import { json, parseBody, validate } from '../http.ts';
import { httpEdge } from '../http-edge.ts';
import { Problem } from '../problem.ts';
import type { MeshDeps } from './mesh-deps.ts';
import { mapMeshError } from './mesh-errors.ts';

/**
 * The mesh's operator handlers, one factory per route; each validates, makes one call and maps
 * the result. functions/mesh-*.ts build them with the production deps.
 */
type Handler = (event: APIGatewayProxyEvent) => Promise<APIGatewayProxyResult>;

const edge = (handler: Handler) =>
  middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(httpEdge({ mapError: mapMeshError }))
    .handler(handler);

const kind = z
  .string()
  .regex(
    /^[a-z][a-z0-9-]{0,31}$/,
    'a provider kind is a lowercase letter, then up to 31 letters, digits or hyphens',
  );
const nodeParams = z.object({ node: nodeName });
const moduleParams = z.object({ node: nodeName, module: moduleName });

export const createMeshNodeAddHandler = (deps: Pick<MeshDeps, 'service'>) =>
  edge(async (event) => {
    const { node } = parseBody(event, z.object({ node: nodeName }).strict());
    await deps.service.addNode(node);
    return json(201, { node });
  });

export const createMeshAssignHandler = (deps: Pick<MeshDeps, 'service'>) =>
  edge(async (event) => {
    const { node, module } = validate(moduleParams, event.pathParameters, 'path');
    const { provides } = parseBody(event, z.object({ provides: kind.optional() }).strict());
    await deps.service.assign(node, module, provides ?? null);
    return json(201, { node, module, provides: provides ?? null });
  });

export const createMeshConsumeHandler = (deps: Pick<MeshDeps, 'service'>) =>
  edge(async (event) => {
    const { node, module } = validate(moduleParams, event.pathParameters, 'path');
    const { provider } = parseBody(
      event,
      z.object({ provider: z.object({ node: nodeName, module: moduleName }).strict() }).strict(),
    );
    await deps.service.consume({ node, module }, provider);
    return json(201, { consumer: { node, module }, provider });
  });

export const createMeshPushHandler = (deps: Pick<MeshDeps, 'store' | 'pushFlow'>) =>
  edge(async (event) => {
    const request = parseBody(event, pushRequestSchema);
    // Checked here so an unknown node is a 404 before any flow starts.
    if (request.node && !(await deps.store.readNode(request.node))) throw new NodeNotFoundError(request.node);
    // A failed flow is a PushFlowFailedError naming what failed; mapMeshError maps it by name.
    return json(200, await deps.pushFlow.push(request));
  });

export const createMeshStatusHandler = (deps: Pick<MeshDeps, 'service'>) =>
  edge(async () => json(200, { nodes: await deps.service.status() }));

export const createMeshDeclarationHandler = (deps: Pick<MeshDeps, 'store' | 'deliveries'>) =>
  edge(async (event) => {
    const { node } = validate(nodeParams, event.pathParameters, 'path');
    const delivery = await deps.deliveries.readDelivery(node);
    if (delivery) return json(200, delivery, { etag: delivery.etag });
    if (!(await deps.store.readNode(node))) throw new NodeNotFoundError(node);
    throw new Problem(404, 'not_sent', `node ${node} has not been sent a declaration yet; push it`);
  });
