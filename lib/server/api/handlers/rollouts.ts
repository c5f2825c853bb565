import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import * as z from 'zod';
import { pageBytes } from '../../core/answer-pages.ts';
import type { Log } from '../../core/ports.ts';
import { BadCursorError } from '../../core/request-errors.ts';
import { advanceForFlow } from '../../core/rollout/drive.ts';
import { rolloutPage, runsOf } from '../../core/rollout/pages.ts';
import type { RolloutDriver, RolloutStore } from '../../core/rollout/ports.ts';
import { maxRolloutNodes, sizeOf } from '../../core/rollout/record.ts';
import { checkAutoUndo, optionsOf, originOf, rolloutRequest } from '../../core/rollout/requests.ts';
import { type Rollouts, rolloutIdPattern } from '../../core/rollout/service.ts';
import { answerCursorAt, answerCursorOf, maxCursorChars } from '../answer-cursor.ts';
import { actorOf } from '../caller.ts';
import { json, parseBody, validate } from '../http.ts';
import { httpEdge, type Refusing } from '../http-edge.ts';
import { rolloutProblem } from '../rollout-problems.ts';

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

/**
 * A rollout's answer: its first page (header, every wave's counts, the nodes that fit 1 MB) and
 * `next` when there are more; the whole record for all but the largest rollouts.
 */
async function firstPage(rollouts: Rollouts, id: string) {
  const { page, next, layout } = await rollouts.page(id, {}, pageBytes);
  return { ...page, ...nextOf(id, layout, undefined, next) };
}

const nextOf = (id: string, layout: string, wave: number | undefined, next: number | null) =>
  next === null
    ? {}
    : { next: answerCursorOf({ of: 'rollout', revision: layout, what: `${id}/${wave ?? 'all'}`, at: next }) };

/**
 * POST /rollouts: records the rollout (`claiming`: its header and parts, no claim) and tells the
 * driver, which claims its nodes and then sends its first wave; 201 with its first page at once.
 */
export const rolloutStartHandler = (deps: RolloutDeps) =>
  edge(deps, async (event) => {
    const request = parseBody(event, rolloutRequest);
    const options = optionsOf(request);
    checkAutoUndo(options, originOf(request));
    const record = await deps.rollouts.start({
      origin: originOf(request),
      ...(request.nodes ? { nodes: request.nodes } : {}),
      options,
      by: actorOf(event),
    });
    await deps.rolloutDriver.started(record);
    // a start asked twice finds the record kept, read without its nodes: its page is read as GET reads it
    if (record.waves.some((w) => !w.nodes)) return json(201, await firstPage(deps.rollouts, record.id));
    const { page, next } = rolloutPage(record, runsOf(record, 0), 0, sizeOf(record), pageBytes);
    return json(201, { ...page, ...nextOf(record.id, String(record.current), undefined, next) });
  });

/**
 * GET /rollouts?limit=N&cursor=ID: newest first, without their nodes; `next` names the page
 * after, as every page does, and `cursor` (the same) stays for the scripts that read it.
 */
export const rolloutListHandler = (deps: RolloutReadDeps) =>
  edge(deps, async (event) => {
    const query = validate(pageQuery, event.queryStringParameters ?? {}, 'query');
    const { rollouts, cursor } = await deps.rolloutStore.list(query);
    return json(200, { rollouts, ...(cursor ? { next: cursor, cursor } : {}) });
  });

export const showQuery = z.strictObject({
  wave: z.coerce.number().int().min(0).max(100).optional(),
  cursor: z.string().max(maxCursorChars).optional(),
  limit: z.coerce.number().int().min(1).max(maxRolloutNodes).optional(),
});

/**
 * GET /rollouts/{id}[?wave=K][&cursor=C][&limit=N]: a page of the record: its header and every
 * wave's size and counts, and the nodes (of every wave in order, or of wave K) from the cursor's
 * place while the page stays under 1 MB; `next` when there are more. A cursor given before a
 * wave was sent: 409 rollout_moved (a send moves nodes between waves).
 */
export const rolloutShowHandler = (deps: { readonly rollouts: Rollouts } & Deps) =>
  edge(deps, async (event) => {
    const { id } = validate(idPath, event.pathParameters, 'path');
    const { wave, cursor, limit } = validate(showQuery, event.queryStringParameters ?? {}, 'query');
    const at = cursor === undefined ? undefined : answerCursorAt(cursor, 'rollout');
    if (at && at.what !== `${id}/${wave ?? 'all'}`) throw new BadCursorError();
    const { page, next, layout, summary } = await deps.rollouts.page(
      id,
      { wave, at: at?.at, layout: at?.revision, limit },
      pageBytes,
    );
    return json(200, { ...page, summary, ...nextOf(id, layout, wave, next) });
  });

/** POST /rollouts/{id}/resume: a paused or halted rollout goes on. */
export const rolloutResumeHandler = (deps: RolloutDeps) =>
  edge(deps, async (event) => {
    const { id } = validate(idPath, event.pathParameters, 'path');
    const record = await deps.rollouts.resume(id, actorOf(event));
    await deps.rolloutDriver.started(record);
    return json(200, await firstPage(deps.rollouts, id));
  });

/** POST /rollouts/{id}/abort: nothing more is sent. */
export const rolloutAbortHandler = (deps: RolloutDeps) =>
  edge(deps, async (event) => {
    const { id } = validate(idPath, event.pathParameters, 'path');
    // one aborted while claiming lets go of its claims a step at a time: its flow, still going, takes them
    await deps.rollouts.abort(id, actorOf(event));
    return json(200, await firstPage(deps.rollouts, id));
  });

/**
 * POST /rollouts/{id}/undo: asks for the undo of an upgrade (docs/decisions/held-back.md): its
 * version set back and the nodes it changed sent what they had before, in its waves, by a new
 * rollout the control queue starts; 202 with that rollout's id, to follow.
 */
export const rolloutUndoHandler = (deps: { readonly rollouts: Rollouts } & Deps) =>
  edge(deps, async (event) => {
    const { id } = validate(idPath, event.pathParameters, 'path');
    const rollout = await deps.rollouts.undo(id, actorOf(event));
    return json(202, { rollout, undoes: id, follow: `/rollouts/${rollout}` });
  });

/** rollout-advance: the rollout flow's Task, one rollout stepped until it waits (lib/server/core/rollout/drive.ts). */
export const rolloutAdvanceHandler =
  (deps: { readonly rollouts: Rollouts; readonly log: Log; readonly now: () => Date }) => (input: unknown) =>
    advanceForFlow(deps, input);
