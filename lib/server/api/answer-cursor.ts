import * as z from 'zod';
import { cursorText, cursorValue } from '../core/cursors.ts';
import { BadCursorError } from '../core/request-errors.ts';

/**
 * The cursor of a paged document (`GET /mesh/export`, `POST /mesh/plan`, `GET /rollouts/{id}`; docs/http-api.md,
 * "Pages and filters"): where the next page starts in the whole answer, and what the whole
 * answer was (its route, the mesh revision, the export's format or the plan's digest), so a page
 * is never cut from another answer. Opaque to callers, as the views' cursors are.
 */
const cursorSchema = z.strictObject({
  of: z.enum(['export', 'plan', 'rollout']),
  revision: z.string().min(1).max(64),
  /** The export's format, or the plan's digest. */
  what: z.string().min(1).max(64),
  at: z.number().int().min(0),
});
export type AnswerCursor = z.infer<typeof cursorSchema>;

/** The most a cursor's text may be: what the routes' schemas allow. */
export const maxCursorChars = 512;

export const answerCursorOf = (cursor: AnswerCursor): string => cursorText(cursor);

/** The cursor a page was asked with, for this route; 400 `bad_cursor` when it is not one this route gave. */
export function answerCursorAt(cursor: string, of: AnswerCursor['of']): AnswerCursor {
  const value = cursorValue(cursor, cursorSchema);
  if (value.of !== of) throw new BadCursorError();
  return value;
}
