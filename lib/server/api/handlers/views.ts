import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import * as z from 'zod';
import type { DeadLetterCounter, DeadLetterReader } from '../../core/control/ports.ts';
import { withHeldBack } from '../../core/hold/held-back.ts';
import type { HoldReader } from '../../core/hold/ports.ts';
import { NodeNotFoundError, PushNotFoundError } from '../../core/mesh/errors.ts';
import { nodeName } from '../../core/names.ts';
import type { Clock, Log } from '../../core/ports.ts';
import type { PushRecordReader } from '../../core/push/ports.ts';
import { pushId, viewOfPushRecord } from '../../core/push/records.ts';
import type { MeshViewReader } from '../../core/views/ports.ts';
import type { ViewPages } from '../../core/views/view-pages.ts';
import { json, validate } from '../http.ts';
import { httpEdge, type Refusing } from '../http-edge.ts';
import { meshProblem } from '../mesh-problems.ts';
import { nextOf, viewQueryOf } from '../view-query.ts';

/**
 * What operators look at: nodes, the graph, the pushes and the dead letters. Every route reads
 * and writes nothing; the console and `mesh node|graph|pushes` use them.
 */
type Handler = (event: APIGatewayProxyEvent) => Promise<APIGatewayProxyResult>;
type Deps = { readonly log?: Log; readonly now?: Clock };

const edge = (parts: Deps & Refusing, handler: Handler) =>
  middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(httpEdge({ mapError: meshProblem, log: parts.log, refusals: parts.refusals }))
    .handler(handler);

export const limitQuery = (fallback: number) =>
  z.strictObject({ limit: z.coerce.number().int().min(1).max(100).default(fallback) });
const queryOf = (event: APIGatewayProxyEvent, fallback: number) =>
  validate(limitQuery(fallback), event.queryStringParameters ?? {}, 'query');
export const nodePath = z.object({ node: nodeName });
export const pushPath = z.object({ push: pushId });
const clockOf = (parts: Deps) => parts.now ?? (() => new Date());

/** GET /nodes?limit&cursor&filters: a page of nodes (lib/server/api/view-query.ts). */
export const meshNodeListHandler = (parts: { readonly viewPages: ViewPages } & Deps) =>
  edge(parts, async (event) => {
    const query = viewQueryOf(event);
    const page = await parts.viewPages.nodesPage(query);
    return json(200, { nodes: page.entries, ...nextOf(page.next, query.filter) });
  });

/** GET /nodes/{node} */
export const meshNodeShowHandler = (
  parts: { readonly meshView: MeshViewReader; readonly holds: HoldReader } & Deps,
) =>
  edge(parts, async (event) => {
    const { node } = validate(nodePath, event.pathParameters, 'path');
    const details = await parts.meshView.details(node);
    if (!details) throw new NodeNotFoundError(node);
    const [shown] = await withHeldBack([details], parts.holds);
    return json(200, shown);
  });

/** GET /graph?limit&cursor&filters: a page of nodes and the relations they consume through. */
export const meshGraphHandler = (parts: { readonly viewPages: ViewPages } & Deps) =>
  edge(parts, async (event) => {
    const query = viewQueryOf(event);
    const { nodes, edges, next } = await parts.viewPages.graphPage(query);
    return json(200, { nodes, edges, ...nextOf(next, query.filter) });
  });

/** GET /pushes?limit=N */
export const meshPushesHandler = (parts: { readonly pushRecords: PushRecordReader } & Deps) =>
  edge(parts, async (event) => {
    const { limit } = queryOf(event, 20);
    const now = clockOf(parts)();
    const records = await parts.pushRecords.list(limit);
    return json(200, { pushes: records.map((record) => viewOfPushRecord(record, now)) });
  });

/** GET /pushes/{push} */
export const meshPushShowHandler = (parts: { readonly pushRecords: PushRecordReader } & Deps) =>
  edge(parts, async (event) => {
    const { push } = validate(pushPath, event.pathParameters, 'path');
    const record = await parts.pushRecords.read(push);
    if (!record) throw new PushNotFoundError(push);
    return json(200, viewOfPushRecord(record, clockOf(parts)()));
  });

/**
 * GET /dead-letters?limit=N: what the consumer noted, and the dead-letter queue's own count, read
 * without receiving. A count that cannot be read is `null`: the notes are still worth showing.
 */
export const controlDeadLettersHandler = (
  parts: { readonly deadLetterNotes: DeadLetterReader; readonly deadLetterCounter: DeadLetterCounter } & Deps,
) =>
  edge(parts, async (event) => {
    const { limit } = queryOf(event, 50);
    const [letters, queue] = await Promise.all([
      parts.deadLetterNotes.list(limit),
      parts.deadLetterCounter.depth().catch((error: unknown) => {
        parts.log?.warn('could not count the dead-letter queue', { error });
        return null;
      }),
    ]);
    return json(200, { letters, queue });
  });
