import { AuditCursorError } from '../../core/audit/errors.ts';
import type { AuditRecord } from '../../core/audit/record.ts';
import type { ChainFinding } from '../../core/audit/verify.ts';
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

/** Where the second walk of verify starts: `days:`, then a day and the index key a page ended on. */
export const daysCursor = 'days:';
export const daysCursorOf = (day: string, start: Item | undefined) =>
  `${daysCursor}${day}${start ? `:${Buffer.from(JSON.stringify(start)).toString('base64url')}` : ''}`;

export function daysAt(cursor: string): { readonly day?: string; readonly start?: Item } {
  const [day, key] = cursor.slice(daysCursor.length).split(':');
  if (!day) return {};
  if (!/^\d{4}-\d\d-\d\d$/.test(day))
    throw new AuditCursorError('the cursor is not one this API gave: start again without it');
  if (key === undefined) return { day };
  try {
    const start = JSON.parse(Buffer.from(key, 'base64url').toString('utf8')) as Item;
    if (Object.values(start).every((part) => typeof part === 'string')) return { day, start };
  } catch {
    // not one of ours: below
  }
  throw new AuditCursorError('the cursor is not one this API gave: start again without it');
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

export const cursorOf = (cursor: Cursor) => Buffer.from(JSON.stringify(cursor)).toString('base64url');

export function cursorAt(text: string | undefined): Cursor {
  if (text === undefined) return {};
  try {
    const value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as Cursor;
    const key = value.start;
    const keyIsText = key === undefined || Object.values(key).every((part) => typeof part === 'string');
    if (
      typeof value === 'object' &&
      keyIsText &&
      (value.day === undefined || /^\d{4}-\d\d-\d\d$/.test(value.day))
    )
      return value;
  } catch {
    // not one of ours: below
  }
  throw new AuditCursorError('the cursor is not one this API gave: start again without it');
}
