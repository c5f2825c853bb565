import * as z from 'zod';
import { Problem } from './problem.ts';

/**
 * The cursor of a paged document (`GET /mesh/export`, `POST /mesh/plan`, `GET /rollouts/{id}`; docs/http-api.md,
 * "Pages and filters"): where the next page starts in the whole answer, and what the whole
 * answer was (its route, the mesh revision, the export's format or the plan's digest), so a page
 * is never cut from another answer. Opaque to callers, as the views' cursors are.
 */
const cursorSchema = z.strictObject({
  v: z.literal(1),
  of: z.enum(['export', 'plan', 'rollout']),
  revision: z.string().min(1).max(64),
  /** The export's format, or the plan's digest. */
  what: z.string().min(1).max(64),
  at: z.number().int().min(0),
});
export type AnswerCursor = z.infer<typeof cursorSchema>;

/** The most a cursor's text may be: what the routes' schemas allow. */
export const maxCursorChars = 512;

export const answerCursorOf = (cursor: Omit<AnswerCursor, 'v'>): string =>
  Buffer.from(JSON.stringify({ v: 1, ...cursor })).toString('base64url');

/** The cursor a page was asked with, for this route; 400 `bad_cursor` when it is not one this route gave. */
export function answerCursorAt(cursor: string, of: AnswerCursor['of']): AnswerCursor {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    value = undefined;
  }
  const parsed = cursorSchema.safeParse(value);
  if (!parsed.success || !/^[A-Za-z0-9_-]+$/.test(cursor) || parsed.data.of !== of)
    throw new Problem(400, 'bad_cursor', 'the cursor is not one this API gave: start again without it');
  return parsed.data;
}
