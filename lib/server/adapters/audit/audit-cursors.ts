import * as z from 'zod';
import type { AuditRecord } from '../../core/audit/record.ts';
import type { ChainFinding } from '../../core/audit/verify.ts';
import { cursorText, cursorValue } from '../../core/cursors.ts';
import type { Item } from '../dynamodb/requests.ts';
import { auditIndexKeys } from './audit-trail.ts';

/** Cursors and keys of the audit trail's reads (audit-reader.ts). */

const dayMs = 24 * 3600 * 1000;

/** Where a page of `mesh audit` starts: a day of the index, and the key a page ended on. */
export type Cursor = { readonly day?: string; readonly start?: Item };

/**
 * A record's index keys against those of its time and place (audit-trail.ts, `auditIndexKeys`):
 * without them `mesh audit` cannot list it, and they are outside its hash.
 */
export function indexFindings(item: Item, record: AuditRecord, place: number): ChainFinding[] {
  // a record moved to another place is named reordered; its keys are those of what it holds
  const wanted = auditIndexKeys(record);
  if (item.gsi1pk === wanted.gsi1pk && item.gsi1sk === wanted.gsi1sk) return [];
  return [
    {
      subject: record.subject,
      seq: place,
      problem: 'hidden',
      says: 'its index keys are not those of its time and place, so mesh audit does not list it',
    },
  ];
}

/** A day of the audit index, and the key of the index a page ended on (all text). */
const day = z.string().regex(/^\d{4}-\d\d-\d\d$/);
const keySchema = z.record(z.string(), z.string());
const cursorSchema = z.strictObject({ day: day.optional(), start: keySchema.optional() });

/** Where the second walk of verify starts: `days:`, then a cursor of the day and the index key a page ended on. */
export const daysCursor = 'days:';
export const daysCursorOf = (day: string, start: Item | undefined) =>
  `${daysCursor}${cursorText({ day, ...(start ? { start } : {}) })}`;

export function daysAt(cursor: string): Cursor {
  const rest = cursor.slice(daysCursor.length);
  return rest === '' ? {} : cursorValue(rest, cursorSchema);
}

export const keyOf = (item: Item) => ({ pk: item.pk, sk: item.sk });
export const indexKeyOf = (item: Item) => ({
  pk: item.pk,
  sk: item.sk,
  gsi1pk: item.gsi1pk,
  gsi1sk: item.gsi1sk,
});
export const dayOf = (date: Date) => date.toISOString().slice(0, 10);
export { dayMs };
export const dayBefore = (day: string) => dayOf(new Date(Date.parse(`${day}T00:00:00Z`) - dayMs));

export const cursorOf = (cursor: Cursor) => cursorText(cursor);

export const cursorAt = (text: string | undefined): Cursor =>
  text === undefined ? {} : cursorValue(text, cursorSchema);
