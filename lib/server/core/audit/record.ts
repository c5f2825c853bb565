import * as z from 'zod';
import { canonicalJson, digestOf } from '../canonical.ts';

/**
 * The audit trail's records (docs/audit.md): one written in the transaction of every change, so
 * no change commits without its record. Records are chained per subject (a node, or the mesh
 * for mesh-wide acts), each naming its predecessor's hash, so a record removed, altered or
 * reordered breaks its chain (docs/decisions/audit-chains.md).
 */

/**
 * Who asked, as the HTTP edge saw it: the caller's IAM ARN (`local` on the local runtime), or
 * `key:<thumbprint>` for a host's own act; where from; and the request's id.
 */
export type Actor = {
  readonly principal: string;
  readonly source: string;
  readonly requestId: string;
};

/**
 * What the trail records. Host acts: `node.enrol`, `node.keys.rotate`, `node.revert`;
 * `request.refused` counts the refusals of a minute from one source (docs/audit.md).
 */
export const auditActions = [
  'token.issue',
  'token.revoke',
  'node.enrol',
  'node.keys.rotate',
  'node.revert',
  'node.disenrol',
  'node.add',
  'node.remove',
  'module.assign',
  'module.unassign',
  'relation.consume',
  'relation.unconsume',
  'relation.rotate',
  'push.start',
  'mesh.apply',
  'report.reset',
  'build.retract',
  'build.record',
  'module.upgrade',
  'summary.rebuild',
  'rollout.start',
  'rollout.resume',
  'rollout.abort',
  'rollout.undo',
  'mesh.freeze',
  'mesh.unfreeze',
  'agent.publish',
  'agent.upgrade',
  'request.refused',
] as const;

export type AuditAction = Exclude<(typeof auditActions)[number], 'request.refused'>;

/** An action to filter the trail by: one the trail records, else nothing could ever match. */
export const auditActionFilter = z.enum(auditActions, {
  error: (issue) => `no audit action ${String(issue.input)}: one of ${auditActions.join(', ')}`,
});

export type AuditDetails = Readonly<Record<string, string | number | boolean>>;

/** What a change says of itself; the store adds the time, the chain's place and the hash. */
export type AuditEntry = {
  readonly by: Actor;
  readonly action: AuditAction;
  /** The chain it goes on: `node:<name>` or `mesh` (`subjectOf`). */
  readonly subject: string;
  /** What was changed: `node:<name>`, `node:<name>/module:<module>`, `mesh`. */
  readonly target: string;
  /** @default 'done' */
  readonly outcome?: string;
  /** Never a secret nor a token. */
  readonly details?: AuditDetails;
};

export const meshSubject = 'mesh';
export const nodeSubject = (node: string) => `node:${node}`;

/** An entry about one node, on the node's own chain. */
export function nodeEntry(
  by: Actor,
  action: AuditAction,
  node: string,
  more: { readonly target?: string; readonly details?: AuditDetails; readonly outcome?: string } = {},
): AuditEntry {
  return {
    by,
    action,
    subject: nodeSubject(node),
    target: more.target ?? nodeSubject(node),
    ...(more.outcome ? { outcome: more.outcome } : {}),
    ...(more.details ? { details: more.details } : {}),
  };
}

/** An actor that is no request's: a test's or a tool's own call. */
export const localActor = (requestId = 'local'): Actor => ({
  principal: 'local',
  source: 'local',
  requestId,
});

/** One record as kept and as read back. */
export type AuditRecord = {
  readonly subject: string;
  readonly seq: number;
  readonly time: string;
  readonly principal: string;
  readonly source: string;
  readonly requestId: string;
  readonly action: string;
  readonly target: string;
  readonly outcome: string;
  readonly details?: AuditDetails;
  /** When the record's TTL ends (epoch seconds). */
  readonly expiresAt: number;
  /** When the previous record's TTL ends: a chain whose start is gone is explained only by that. */
  readonly prevExpiresAt?: number;
  readonly prevHash: string;
  readonly hash: string;
};

/** The previous hash of a chain's first record. */
export const chainStart = '0'.repeat(64);

/** A chain's last record, as kept on its head: what the next record follows. */
export type ChainHead = { readonly seq: number; readonly hash: string; readonly expiresAt?: number };

/** SHA-256 of the record's canonical JSON (its hash left out), its previous hash included. */
export function hashOf(record: Omit<AuditRecord, 'hash'>): string {
  const { subject, seq, time, principal, source, requestId, action, target, outcome } = record;
  const { details, expiresAt, prevExpiresAt, prevHash } = record;
  return digestOf(
    canonicalJson({
      subject,
      seq,
      time,
      principal,
      source,
      requestId,
      action,
      target,
      outcome,
      details,
      expiresAt,
      prevExpiresAt,
      prevHash,
    }),
  );
}

/**
 * The record that follows `head` on its chain (the chain's first when there is no head). Its
 * expiry is never before the one before it (a shorter retention set since does not make a later
 * record go first): a chain's records expire oldest first, so a record kept that has not expired
 * says every record after it has not either, and the head's word that they have is checked
 * against it (verify.ts).
 */
export function nextRecord(
  entry: AuditEntry,
  head: ChainHead | undefined,
  at: { readonly time: string; readonly retentionDays: number },
): AuditRecord {
  const body = {
    subject: entry.subject,
    seq: (head?.seq ?? 0) + 1,
    time: at.time,
    principal: entry.by.principal,
    source: entry.by.source,
    requestId: entry.by.requestId,
    action: entry.action,
    target: entry.target,
    outcome: entry.outcome ?? 'done',
    ...(entry.details ? { details: entry.details } : {}),
    expiresAt: Math.max(
      Math.floor(Date.parse(at.time) / 1000) + at.retentionDays * 24 * 3600,
      head?.expiresAt ?? 0,
    ),
    ...(head?.expiresAt !== undefined ? { prevExpiresAt: head.expiresAt } : {}),
    prevHash: head?.hash ?? chainStart,
  };
  return { ...body, hash: hashOf(body) };
}
