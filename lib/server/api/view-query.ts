import type { APIGatewayProxyEvent } from 'aws-lambda';
import * as z from 'zod';
import { parseSelector } from '../core/mesh/labels.ts';
import { moduleName, nodeName } from '../core/names.ts';
import {
  defaultPageNodes,
  filterText,
  maxPageNodes,
  type ViewFilter,
  type ViewQuery,
} from '../core/views/view-pages.ts';
import { validate } from './http.ts';
import { Problem } from './problem.ts';

/**
 * The query of `GET /status`, `/nodes` and `/graph` (docs/http-api.md, "Pages and filters"):
 * `limit`, `cursor`, and the filters `behind`, `offline`, `failed`, `unhealthy` (`true`), `module`, `on`
 * (a label selector) and `prefix` (the start of a node's name).
 */
const flag = z.enum(['true'], { message: 'is true, or left out' });
const viewQuerySchema = z.strictObject({
  limit: z.coerce.number().int().min(1).max(maxPageNodes).optional(),
  cursor: z.string().max(512).optional(),
  behind: flag.optional(),
  offline: flag.optional(),
  failed: flag.optional(),
  unhealthy: flag.optional(),
  module: moduleName.optional(),
  on: z.string().min(1).max(512).optional(),
  prefix: z
    .string()
    .regex(/^[a-z0-9-]{1,63}$/, 'is the start of a node name: lower-case letters, digits and -')
    .optional(),
});

/** What a cursor holds: where to start, and the filters it was given for. */
const cursorSchema = z.strictObject({ v: z.literal(1), after: nodeName, filter: z.string() });

export function viewQueryOf(event: APIGatewayProxyEvent): ViewQuery {
  const query = validate(viewQuerySchema, event.queryStringParameters ?? {}, 'query');
  let on: ViewFilter['on'];
  if (query.on !== undefined) {
    try {
      on = parseSelector(query.on);
    } catch (error) {
      throw new Problem(400, 'invalid_request', `invalid query: on: ${(error as Error).message}`);
    }
  }
  const filter: ViewFilter = {
    ...(query.behind ? { behind: true } : {}),
    ...(query.offline ? { offline: true } : {}),
    ...(query.failed ? { failed: true } : {}),
    ...(query.unhealthy ? { unhealthy: true } : {}),
    ...(query.module ? { module: query.module } : {}),
    ...(on ? { on } : {}),
    ...(query.prefix ? { prefix: query.prefix } : {}),
  };
  const after = query.cursor === undefined ? undefined : afterOf(query.cursor, filter);
  return { filter, limit: query.limit ?? defaultPageNodes, ...(after ? { after } : {}) };
}

/** The cursor a page answers with: opaque to callers, so its layout may change. */
export function cursorOf(after: string, filter: ViewFilter): string {
  return Buffer.from(JSON.stringify({ v: 1, after, filter: filterText(filter) })).toString('base64url');
}

function afterOf(cursor: string, filter: ViewFilter): string {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    value = undefined;
  }
  const parsed = cursorSchema.safeParse(value);
  if (!parsed.success || !/^[A-Za-z0-9_-]+$/.test(cursor))
    throw new Problem(400, 'bad_cursor', 'the cursor is not one this API gave: start again without it');
  if (parsed.data.filter !== filterText(filter))
    throw new Problem(
      400,
      'bad_cursor',
      `the cursor was given for other filters (${parsed.data.filter || 'none'}): ask with the same filters, or start again without it`,
    );
  return parsed.data.after;
}

/** The answer's `next`, present only when there is more. */
export const nextOf = (next: string | null, filter: ViewFilter) =>
  next === null ? {} : { next: cursorOf(next, filter) };
