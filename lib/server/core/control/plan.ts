import { isSequenceAhead } from './bounds.ts';
import { type ControlMessage, parseControlMessage, type ReportBody } from './messages.ts';
import type { QueueRecord } from './ports.ts';

/** What the consumer will do with one record of a batch, decided before any of them is settled. */
export type Plan =
  | { readonly ok: true; readonly message: ControlMessage; readonly setAsideBy?: string }
  | { readonly ok: false; readonly reason: string; readonly type?: string; readonly subject?: string };

/**
 * Reads every record once and marks what a newer message of the same subject in this batch
 * sets aside: an upgrade or catch-up followed by another of its subject, and a report that a
 * newer report of its node makes moot (see `coversReport`); a report that leads `now` by more
 * than the bound sets nothing aside. Builds are each kept once anyway.
 */
export function planBatch(records: readonly QueueRecord[], now: Date): Map<string, Plan> {
  const plans = new Map<string, Plan>();
  const newest = new Map<string, { messageId: string; index: number }>();
  const reports: Array<{ messageId: string; index: number; body: ReportBody }> = [];
  records.forEach((record, index) => {
    const parsed = parseControlMessage(record.body);
    if (!parsed.ok) {
      plans.set(record.messageId, parsed);
      return;
    }
    const { message } = parsed;
    if (message.subject !== record.groupId) {
      plans.set(record.messageId, {
        ok: false,
        reason: `schema: subject ${message.subject} is not the message group ${record.groupId}`,
        type: message.type,
        subject: message.subject,
      });
      return;
    }
    plans.set(record.messageId, { ok: true, message });
    if (message.type === 'build') return;
    if (message.type === 'report') {
      // One that will be refused for leading the clock covers nothing: it is never recorded.
      if (!isSequenceAhead(message.body.sequence, now))
        reports.push({ messageId: record.messageId, index, body: message.body });
      return;
    }
    newest.set(message.subject, { messageId: record.messageId, index });
  });
  for (const [messageId, plan] of plans) {
    if (!plan.ok || plan.message.type === 'build') continue;
    if (plan.message.type === 'report') {
      const self = reports.find((report) => report.messageId === messageId);
      const by = self && reports.find((other) => other !== self && coversReport(other, self));
      if (by) plans.set(messageId, { ...plan, setAsideBy: `report ${by.body.sequence} (${by.body.state})` });
      continue;
    }
    const last = newest.get(plan.message.subject);
    if (last && last.messageId !== messageId) {
      plans.set(messageId, { ...plan, setAsideBy: `message ${last.messageId}` });
    }
  }
  return plans;
}

/**
 * What a report writes besides sequence and times: a heartbeat nothing (it keeps the state),
 * applying and failed the state and revision, applied those and the applied revision too.
 */
const reportWeight = { heartbeat: 0, applying: 1, failed: 1, applied: 2 } as const;

type BatchReport = { readonly index: number; readonly body: ReportBody };

/**
 * Whether `newer` makes `older` moot: it is of the same node, later in the host's sequence (or
 * the same sequence, and first in the batch or weightier), and it writes everything `older`
 * would: the health it carries too, and never a revert, whose audit record only its own
 * recording writes. So a heartbeat never sets aside an applied report (the store keeps the state a
 * heartbeat does not carry), and an applying report never sets aside an applied one (only an
 * applied report moves the applied revision).
 */
function coversReport(newer: BatchReport, older: BatchReport): boolean {
  if (newer.body.node !== older.body.node) return false;
  // A revert is audited when it is recorded: never set aside. Health is written by a report that
  // carries it, so only another that carries it makes it moot.
  if (older.body.revert !== undefined) return false;
  if (older.body.health !== undefined && newer.body.health === undefined) return false;
  const newerWeight = reportWeight[newer.body.state];
  const olderWeight = reportWeight[older.body.state];
  if (newerWeight < olderWeight) return false;
  if (newer.body.sequence !== older.body.sequence) return newer.body.sequence > older.body.sequence;
  return newerWeight > olderWeight || newer.index < older.index;
}
