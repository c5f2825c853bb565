import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import * as z from 'zod';
import { type RemovalPlan, relationName } from '../../core/mesh/removal.ts';
import type { MeshService } from '../../core/mesh/service.ts';
import { moduleName, nodeName } from '../../core/names.ts';
import type { Log } from '../../core/ports.ts';
import type { RevocationSignal } from '../../core/signal/ports.ts';
import { actorOf } from '../caller.ts';
import { json, parseBody, validate } from '../http.ts';
import { httpEdge, type Refusing } from '../http-edge.ts';
import { meshProblem } from '../mesh-problems.ts';

/**
 * The mesh's removals and provision rotation, one factory per function of lib/server/functions/mesh.ts.
 * Each answers what it took away and which nodes are now behind: one push delivers them all.
 */
export type MeshRemovalDeps = { readonly meshService: MeshService; readonly log?: Log };
type Deps = MeshRemovalDeps;
type Handler = (event: APIGatewayProxyEvent) => Promise<APIGatewayProxyResult>;

const edge = (deps: Deps & Refusing, handler: Handler) =>
  middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(httpEdge({ mapError: meshProblem, log: deps.log, refusals: deps.refusals }))
    .handler(handler);

export const relationPath = z.object({
  node: nodeName,
  module: moduleName,
  providerNode: nodeName,
  providerModule: moduleName,
});
export const cascadeQuery = z
  .object({ cascade: z.enum(['true', 'false'], { message: 'cascade is true or false' }).optional() })
  .strict();
export const assignmentPath = z.object({ node: nodeName, module: moduleName });
export const nodePath = z.object({ node: nodeName });
export const rotateBody = z.strictObject({});
const cascadeOf = (event: APIGatewayProxyEvent) =>
  validate(cascadeQuery, event.queryStringParameters ?? {}, 'query').cascade === 'true';

/** What a removal answers: what went, and what is behind because of it. */
export type RemovalAnswer = {
  readonly removed: {
    readonly node: string | null;
    readonly modules: ReadonlyArray<{ readonly node: string; readonly module: string }>;
    readonly relations: readonly string[];
  };
  readonly behind: readonly string[];
};

const answer = (plan: RemovalPlan): RemovalAnswer => ({
  removed: {
    node: plan.node ?? null,
    modules: plan.assignments,
    relations: plan.relations.map(relationName),
  },
  behind: plan.marked,
});

/** DELETE /nodes/{node}/modules/{module}/consumes/{providerNode}/{providerModule} */
export const meshUnconsumeHandler = (deps: Deps) =>
  edge(deps, async (event) => {
    const path = validate(relationPath, event.pathParameters, 'path');
    const plan = await deps.meshService.unconsume(
      { node: path.node, module: path.module },
      { node: path.providerNode, module: path.providerModule },
      actorOf(event),
    );
    return json(200, answer(plan));
  });

/** DELETE /nodes/{node}/modules/{module}?cascade=true */
export const meshUnassignHandler = (deps: Deps) =>
  edge(deps, async (event) => {
    const { node, module } = validate(assignmentPath, event.pathParameters, 'path');
    return json(200, answer(await deps.meshService.unassign(node, module, cascadeOf(event), actorOf(event))));
  });

/** DELETE /nodes/{node}?cascade=true: the node, its token and host identity, and (with cascade) its consumers' relations. */
export const meshNodeRemoveHandler = (deps: Deps & { readonly signals: RevocationSignal }) =>
  edge(deps, async (event) => {
    const { node } = validate(nodePath, event.pathParameters, 'path');
    const plan = await deps.meshService.removeNode(node, cascadeOf(event), actorOf(event));
    await deps.signals.revoked(node);
    return json(200, answer(plan));
  });

/** POST /nodes/{node}/modules/{module}/consumes/{providerNode}/{providerModule}/rotate */
export const meshRotateHandler = (deps: Deps) =>
  edge(deps, async (event) => {
    const path = validate(relationPath, event.pathParameters, 'path');
    parseBody(event, rotateBody);
    const consumer = { node: path.node, module: path.module };
    const provider = { node: path.providerNode, module: path.providerModule };
    await deps.meshService.rotate(consumer, provider, actorOf(event));
    return json(200, {
      rotated: `${consumer.node}/${consumer.module} -> ${provider.node}/${provider.module}`,
      behind: [...new Set([consumer.node, provider.node])].sort(),
    });
  });
