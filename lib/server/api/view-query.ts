import type { APIGatewayProxyEvent } from 'aws-lambda';
import * as z from 'zod';
import { cursorText, cursorValue } from '../core/cursors.ts';
import { parseSelector } from '../core/mesh/labels.ts';
import { moduleName, nodeName } from '../core/names.ts';
import { BadCursorError, InvalidRequestError } from '../core/request-errors.ts';
import {
  defaultPageNodes,
  filterText,
  maxPageNodes,
  type ViewFilter,
  type ViewQuery,
} from '../core/views/view-pages.ts';
import { validate } from './http.ts';

/**
 * The query of `GET /status`, `/nodes` and `/graph` (docs/http-api.md, "Pages and filters"):
 * `limit`, `cursor`, and the filters `behind`, `offline`, `failed`, `unhealthy`, `current`,
 * `unenrolled` (`true`), `module`, `on`
 * (a label selector) and `prefix` (the start of a node's name).
 */
const flag = z.enum(['true'], { message: 'is true, or left out' });
export const viewQuerySchema = z.strictObject({
  limit: z.coerce.number().int().min(1).max(maxPageNodes).optional(),
  cursor: z.string().max(512).optional(),
  behind: flag.optional(),
  offline: flag.optional(),
  failed: flag.optional(),
  unhealthy: flag.optional(),
  current: flag.optional(),
  unenrolled: flag.optional(),
  module: moduleName.optional(),
  on: z.string().min(1).max(512).optional(),
  prefix: z
    .string()
    .regex(/^[a-z0-9-]{1,63}$/, 'is the start of a node name: lower-case letters, digits and -')
    .optional(),
});

/** What a cursor holds: where to start, and the filters it was given for. */
const cursorSchema = z.strictObject({ after: nodeName, filter: z.string() });

export function viewQueryOf(event: APIGatewayProxyEvent): ViewQuery {
  const query = validate(viewQuerySchema, event.queryStringParameters ?? {}, 'query');
  let on: ViewFilter['on'];
  if (query.on !== undefined) {
    try {
      on = parseSelector(query.on);
    } catch (error) {
      throw new InvalidRequestError(`invalid query: on: ${(error as Error).message}`, [
        `on: ${(error as Error).message}`,
      ]);
    }
  }
  const filter: ViewFilter = {
    ...(query.behind ? { behind: true } : {}),
    ...(query.offline ? { offline: true } : {}),
    ...(query.failed ? { failed: true } : {}),
    ...(query.unhealthy ? { unhealthy: true } : {}),
    ...(query.current ? { current: true } : {}),
    ...(query.unenrolled ? { unenrolled: true } : {}),
    ...(query.module ? { module: query.module } : {}),
    ...(on ? { on } : {}),
    ...(query.prefix ? { prefix: query.prefix } : {}),
  };
  const after = query.cursor === undefined ? undefined : afterOf(query.cursor, filter);
  return { filter, limit: query.limit ?? defaultPageNodes, ...(after ? { after } : {}) };
}

/** The cursor a page answers with: where it ended, and the filters it was asked with. */
export const cursorOf = (after: string, filter: ViewFilter): string =>
  cursorText({ after, filter: filterText(filter) });

function afterOf(cursor: string, filter: ViewFilter): string {
  const value = cursorValue(cursor, cursorSchema);
  if (value.filter !== filterText(filter))
    throw new BadCursorError(
      `the cursor was given for other filters (${value.filter || 'none'}): ask with the same filters, or start again without it`,
    );
  return value.after;
}

/** The answer's `next`, present only when there is more. */
export const nextOf = (next: string | null, filter: ViewFilter) =>
  next === null ? {} : { next: cursorOf(next, filter) };
