import type * as z from 'zod';
import { BadCursorError } from './request-errors.ts';

/**
 * The one cursor codec of every paged answer (views, exports, plans, rollouts, the audit trail;
 * docs/http-api.md, "Pages and filters"): a versioned JSON value in base64url, opaque to callers
 * so its layout may change, read back only through the schema of the answer that gave it.
 */

const version = 1;

export const cursorText = (value: Readonly<Record<string, unknown>>): string =>
  Buffer.from(JSON.stringify({ v: version, ...value })).toString('base64url');

/** The value a cursor holds, read by `schema`; BadCursorError (400 `bad_cursor`) when it is not one of ours. */
export function cursorValue<Schema extends z.ZodType>(text: string, schema: Schema): z.infer<Schema> {
  let value: unknown;
  try {
    value = /^[A-Za-z0-9_-]+$/.test(text)
      ? JSON.parse(Buffer.from(text, 'base64url').toString('utf8'))
      : undefined;
  } catch {
    value = undefined;
  }
  if (typeof value !== 'object' || value === null || (value as { v?: unknown }).v !== version)
    throw new BadCursorError();
  const { v: _version, ...rest } = value as Record<string, unknown>;
  const parsed = schema.safeParse(rest);
  if (!parsed.success) throw new BadCursorError();
  return parsed.data;
}
