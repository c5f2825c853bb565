import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import * as z from 'zod';
import type { FreezeTarget } from '../../core/hold/freeze.ts';
import type { Freezes } from '../../core/hold/service.ts';
import type { Log } from '../../core/ports.ts';
import { actorOf } from '../caller.ts';
import { holdProblem } from '../hold-problems.ts';
import { json, parseBody, validate } from '../http.ts';
import { httpEdge, type Refusing } from '../http-edge.ts';

/**
 * The freeze routes (docs/http-api.md#freezes, docs/decisions/held-back.md): freeze nodes by a
 * selector or all of them, lift a freeze, list those in force. A freeze holds from its write on:
 * the next send that reads the freezes leaves its nodes alone.
 */
type Handler = (event: APIGatewayProxyEvent) => Promise<APIGatewayProxyResult>;
export type FreezeDeps = { readonly freezes: Freezes; readonly log?: Log };

const edge = (deps: FreezeDeps & Refusing, handler: Handler) =>
  middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(httpEdge({ mapError: holdProblem, log: deps.log, refusals: deps.refusals }))
    .handler(handler);

/** Exactly one of a selector (`on`) or every node (`all: true`). */
const target = {
  on: z.string().min(1).max(500).optional(),
  all: z.literal(true).optional(),
};
const oneTarget = (t: { on?: string | undefined; all?: true | undefined }) =>
  (t.on === undefined) !== (t.all === undefined);
const targetRule = { message: 'name the nodes: on: SELECTOR, or all: true' };

export const freezeBody = z
  .strictObject({
    ...target,
    reason: z.string().min(1).max(500),
    until: z.string().min(1).max(40).optional(),
  })
  .refine(oneTarget, targetRule);

export const liftQuery = z
  .strictObject({ on: target.on, all: z.literal('true').optional() })
  .refine((q) => (q.on === undefined) !== (q.all === undefined), targetRule);

const targetOf = (t: { on?: string | undefined; all?: unknown }): FreezeTarget =>
  t.on !== undefined ? { selector: t.on } : { all: true };

/** POST /freezes: holds back every node the selector matches (or all), with a reason, until a time or until lifted. */
export const freezeHandler = (deps: FreezeDeps) =>
  edge(deps, async (event) => {
    const body = parseBody(event, freezeBody);
    const freeze = await deps.freezes.freeze(targetOf(body), body, actorOf(event));
    return json(201, { freeze });
  });

/** DELETE /freezes?on=SELECTOR | ?all=true: lifts the freeze made on the same target. */
export const unfreezeHandler = (deps: FreezeDeps) =>
  edge(deps, async (event) => {
    const query = validate(liftQuery, event.queryStringParameters ?? {}, 'query');
    const lifted = await deps.freezes.unfreeze(targetOf(query), actorOf(event));
    return json(200, { lifted, freezes: await deps.freezes.list() });
  });

/** GET /freezes: the freezes in force. */
export const freezeListHandler = (deps: FreezeDeps) =>
  edge(deps, async () => json(200, { freezes: await deps.freezes.list() }));
