import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import * as z from 'zod';
import type { Log } from '../../core/ports.ts';
import { advanceForFlow } from '../../core/rollout/drive.ts';
import type { RolloutDriver, RolloutStore } from '../../core/rollout/ports.ts';
import { optionsOf, originOf, rolloutRequest } from '../../core/rollout/requests.ts';
import { type Rollouts, rolloutIdPattern, summaryOf } from '../../core/rollout/service.ts';
import { json, parseBody, validate } from '../http.ts';
import { httpEdge, type Refusing } from '../http-edge.ts';
import { rolloutProblem } from '../problems/rollout.ts';

/**
 * The rollout routes (docs/http-api.md#rollouts): start one, list them, show one, resume or
 * abort it. A rollout outlives the request: the answer is its record as it stands, and the
 * driver (docs/decisions/rollouts-in-waves.md) moves it from there.
 */
type Handler = (event: APIGatewayProxyEvent) => Promise<APIGatewayProxyResult>;
type Deps = { readonly log?: Log };
export type RolloutDeps = { readonly rollouts: Rollouts; readonly rolloutDriver: RolloutDriver } & Deps;
export type RolloutReadDeps = { readonly rolloutStore: RolloutStore } & Deps;

const edge = (deps: Deps & Refusing, handler: Handler) =>
  middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(httpEdge({ mapError: rolloutProblem, log: deps.log, refusals: deps.refusals }))
    .handler(handler);

export const idPath = z.strictObject({
  id: z.string().regex(rolloutIdPattern, 'a rollout id looks like 20260722T101500123Z-4f2a9c'),
});
export const pageQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(50).default(20),
  cursor: z.string().regex(rolloutIdPattern).optional(),
});

/** POST /rollouts: records the rollout and tells the driver; 201 with the record. */
export const rolloutStartHandler = (deps: RolloutDeps) =>
  edge(deps, async (event) => {
    const request = parseBody(event, rolloutRequest);
    const options = optionsOf(request);
    const record = await deps.rollouts.start({
      origin: originOf(request),
      ...(request.nodes ? { nodes: request.nodes } : {}),
      options,
    });
    await deps.rolloutDriver.started(record);
    return json(201, record);
  });

/** GET /rollouts?limit=N&cursor=ID: newest first, without their nodes. */
export const rolloutListHandler = (deps: RolloutReadDeps) =>
  edge(deps, async (event) => {
    const query = validate(pageQuery, event.queryStringParameters ?? {}, 'query');
    return json(200, await deps.rolloutStore.list(query));
  });

/** GET /rollouts/{id}: the whole record, every wave and node. */
export const rolloutShowHandler = (deps: { readonly rollouts: Rollouts } & Deps) =>
  edge(deps, async (event) => {
    const { id } = validate(idPath, event.pathParameters, 'path');
    const record = await deps.rollouts.read(id);
    return json(200, { ...record, summary: summaryOf(record) });
  });

/** POST /rollouts/{id}/resume: a paused or halted rollout goes on. */
export const rolloutResumeHandler = (deps: RolloutDeps) =>
  edge(deps, async (event) => {
    const { id } = validate(idPath, event.pathParameters, 'path');
    const record = await deps.rollouts.resume(id);
    await deps.rolloutDriver.started(record);
    return json(200, record);
  });

/** POST /rollouts/{id}/abort: nothing more is sent. */
export const rolloutAbortHandler = (deps: RolloutDeps) =>
  edge(deps, async (event) => {
    const { id } = validate(idPath, event.pathParameters, 'path');
    return json(200, await deps.rollouts.abort(id));
  });

/** rollout-advance: the rollout flow's Task, one rollout stepped until it waits (lib/core/rollout/drive.ts). */
export const rolloutAdvanceHandler =
  (deps: { readonly rollouts: Rollouts; readonly log: Log; readonly now: () => Date }) => (input: unknown) =>
    advanceForFlow(deps, input);
