import type { AuditRecord } from './record.ts';
import type { ChainFinding } from './verify.ts';

/** `mesh audit`'s question (docs/audit.md): newest first, each filter optional. */
export type AuditQuery = {
  readonly node?: string;
  /** The principal exactly: an IAM ARN, `local`, or `key:<thumbprint>`. */
  readonly actor?: string;
  readonly action?: string;
  /** ISO time: records at or after it. */
  readonly since?: string;
  /** At most this many records on the page. */
  readonly limit: number;
  /** Where the page starts: the `next` of the page before, opaque. */
  readonly cursor?: string;
};

/** One page; `next` is absent at the end. A page may hold fewer than `limit` and still have a next. */
export type AuditPage = { readonly records: readonly AuditRecord[]; readonly next?: string };

/** What `mesh audit verify` found: every chain walked, each finding naming a record. */
export type AuditVerdict = {
  readonly chains: number;
  readonly records: number;
  /** The first findings, at most `findingsShown`; `findingCount` counts them all. */
  readonly findings: readonly ChainFinding[];
  readonly findingCount: number;
};

export const findingsShown = 100;

export interface AuditReader {
  page(query: AuditQuery): Promise<AuditPage>;
  verify(): Promise<AuditVerdict>;
}

/** The cursor is not one this reader gave. */
export class AuditCursorError extends Error {
  override name = 'AuditCursorError';
}
