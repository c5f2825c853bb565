import type { Actor, AuditRecord } from './record.ts';
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

/**
 * What `mesh audit verify` found on the chains one page walked, each finding naming a record;
 * `next` names where the next page starts (the chains are walked in order of their subjects).
 */
export type AuditVerdict = {
  readonly chains: number;
  readonly records: number;
  /** Records the day index lists, each checked to be of a chain in the list of chains. */
  readonly indexed?: number;
  /** The first findings, at most `findingsShown`; `findingCount` counts them all. */
  readonly findings: readonly ChainFinding[];
  readonly findingCount: number;
  readonly next?: string;
};

/**
 * Where a page of verify starts (`after`: the `next` of the page before, a chain's subject or a
 * place in the day index), and the time `until` (epoch ms) after which it answers.
 */
export type VerifyRange = { readonly after?: string; readonly until?: number };

export const findingsShown = 100;

export interface AuditReader {
  page(query: AuditQuery): Promise<AuditPage>;
  /** At least one chain, whole, then more while time is left. */
  verify(range?: VerifyRange): Promise<AuditVerdict>;
}

/** A refused request (4xx) as the HTTP edge saw it: who, from where, which route, what answer. */
export type Refusal = {
  readonly by: Actor;
  /** `METHOD /resource/{path}` as routed. */
  readonly route: string;
  readonly status: number;
  readonly code: string;
};

/**
 * Counts refused requests per source and minute, best effort and bounded (docs/audit.md): a
 * refusal that cannot be noted is dropped, never a failure of its own.
 */
export interface RefusalLog {
  note(refusal: Refusal): Promise<void>;
}
