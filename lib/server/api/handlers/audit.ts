import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import * as z from 'zod';
import type { AuditReader } from '../../core/audit/ports.ts';
import { auditActionFilter } from '../../core/audit/record.ts';
import { nodeName } from '../../core/names.ts';
import type { Log } from '../../core/ports.ts';
import { json, timeToAnswer, validate } from '../http.ts';
import { httpEdge, type Refusing } from '../http-edge.ts';

/** The audit trail read back (docs/audit.md): `GET /audit` and `GET /audit/verify`. */
export type AuditDeps = { readonly auditReader: AuditReader; readonly log?: Log };
type Handler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;

const edge = (deps: AuditDeps & Refusing, handler: Handler) =>
  middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(httpEdge({ log: deps.log, refusals: deps.refusals }))
    .handler(handler);

/** At most this many records a page: each is well under 2 KB, so a page stays far below 1 MB. */
export const maxAuditPage = 200;
const cursor = z.string().regex(/^[A-Za-z0-9_-]{1,1024}$/, 'a cursor this API gave');

export const auditQuery = z
  .object({
    node: nodeName.optional(),
    actor: z.string().min(1).max(2048).optional(),
    action: auditActionFilter.optional(),
    since: z.iso.datetime({ offset: true }).optional(),
    limit: z.coerce.number().int().min(1).max(maxAuditPage).optional(),
    cursor: cursor.optional(),
  })
  .strict();

/** GET /audit?node&actor&action&since&limit&cursor: newest first. */
export const auditListHandler = (deps: AuditDeps) =>
  edge(deps, async (event) => {
    const query = validate(auditQuery, event.queryStringParameters ?? {}, 'query');
    const since = query.since === undefined ? undefined : new Date(query.since).toISOString();
    const page = await deps.auditReader.page({
      ...query,
      ...(since === undefined ? {} : { since }),
      limit: query.limit ?? 50,
    });
    return json(200, { records: page.records, ...(page.next ? { next: page.next } : {}) });
  });

export const verifyQuery = z.object({ after: z.string().min(1).max(1024).optional() }).strict();

/** GET /audit/verify?after: every chain from after `after`, as many as the request has time for. */
export const auditVerifyHandler = (deps: AuditDeps) =>
  edge(deps, async (event, context) => {
    const { after } = validate(verifyQuery, event.queryStringParameters ?? {}, 'query');
    // Half the time left: a chain begun near the end is still walked whole before answering.
    const until = Date.now() + timeToAnswer(event, context) / 2;
    return json(200, await deps.auditReader.verify({ ...(after ? { after } : {}), until }));
  });
