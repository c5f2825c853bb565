import { HeldBehindError, MessageHeldError } from './errors.ts';
import { decideHold, type HoldPolicy } from './hold.ts';
import { type ControlMessage, parseControlMessage, type ReportBody } from './messages.ts';
import { type Outcome, outcomeOfError } from './outcome.ts';
import type { DeadLetterKind, QueueRecord, QueueSettlement } from './ports.ts';
import { type SettleDeps, settleMessage } from './settle.ts';

export type ConsumerDeps = SettleDeps & {
  readonly settlement: QueueSettlement;
  readonly holdPolicy: HoldPolicy;
  /** Milliseconds since the epoch; injected so the bound can be tested without waiting. */
  readonly clock: () => number;
  /** Counts a message let go past the bound (a Powertools metric on AWS). */
  readonly countLost: (type: string) => void;
};

type Plan =
  | { readonly ok: true; readonly message: ControlMessage; readonly setAsideBy?: string }
  | { readonly ok: false; readonly reason: string; readonly type?: string; readonly subject?: string };

type Letter = {
  readonly kind: DeadLetterKind;
  readonly reason: string;
  readonly type?: string | undefined;
  readonly subject?: string | undefined;
};

type GroupState = {
  tail: Promise<void>;
  held?: { readonly messageId: string; readonly visibilitySeconds: number };
};

/**
 * One batch as Lambda hands it over. `handle(record)` resolves when the record may be
 * acknowledged and throws when it must go back (a batch item failure). Every record's handle
 * may be started at once: records of one subject take turns in batch order, subjects run side
 * by side. Once a record of a subject is held, the later records of that subject go back too,
 * hidden as long as it is, so the subject's order is kept.
 */
export function startBatch(records: readonly QueueRecord[], deps: ConsumerDeps) {
  const plans = planBatch(records);
  const groups = new Map<string, GroupState>();

  async function handle(record: QueueRecord): Promise<string> {
    const state = groups.get(record.groupId) ?? { tail: Promise.resolve() };
    groups.set(record.groupId, state);
    const before = state.tail;
    let release = () => {};
    state.tail = new Promise<void>((resolve) => {
      release = resolve;
    });
    await before;
    try {
      return await handleInTurn(record, state);
    } finally {
      release();
    }
  }

  async function handleInTurn(record: QueueRecord, state: GroupState): Promise<string> {
    if (state.held) {
      await holdQuietly(record, state.held.visibilitySeconds);
      throw new HeldBehindError(`${record.groupId}: behind held message ${state.held.messageId}`);
    }
    const plan = plans.get(record.messageId) ?? { ok: false, reason: 'not planned' };
    if (!plan.ok) {
      deps.log.warn(`malformed ${record.groupId}: ${plan.reason}`, { messageId: record.messageId });
      // A malformed message does not hold its group: nothing after it depends on it.
      const letter = {
        kind: 'malformed' as const,
        reason: plan.reason,
        type: plan.type,
        subject: plan.subject,
      };
      return settleDead(record, undefined, letter);
    }
    const { message } = plan;
    if (plan.setAsideBy) {
      const note = `set aside by newer ${plan.setAsideBy}`;
      deps.log.info(`${message.type} ${message.subject}: ${note}`, { messageId: record.messageId });
      return note;
    }
    let outcome: Outcome;
    try {
      outcome = { kind: 'ack', note: await settleMessage(message, record.messageId, deps) };
    } catch (error) {
      outcome = outcomeOfError(error);
      if (outcome.kind !== 'ack')
        deps.log.warn(`${message.type} ${message.subject}: ${outcome.reason}`, { error });
    }
    const about = { type: message.type, subject: message.subject };
    switch (outcome.kind) {
      case 'ack':
        deps.log.info(`${message.type} ${message.subject}: ${outcome.note}`, { messageId: record.messageId });
        return outcome.note;
      case 'deadLetter':
        return settleDead(record, state, { kind: outcome.dead, reason: outcome.reason, ...about });
      case 'hold':
        return settleHold(record, state, message, outcome.reason);
    }
  }

  async function settleHold(record: QueueRecord, state: GroupState, message: ControlMessage, reason: string) {
    const decision = decideHold(deps.holdPolicy, record.receiveCount, record.firstReceivedAtMs, deps.clock());
    if (decision.kind === 'lost') {
      const failure = await deadLetter(record, {
        kind: 'lost',
        reason,
        type: message.type,
        subject: message.subject,
      });
      const notCopied = failure ? `; could not dead-letter it: ${describe(failure)}` : '';
      deps.log.error(
        `lost ${message.type} ${message.subject} after ${decision.heldSeconds} s: ${reason}${notCopied}`,
        { messageId: record.messageId },
      );
      deps.countLost(message.type);
      return failure ? `lost: ${reason}${notCopied}` : `dead-lettered (lost): ${reason}`;
    }
    state.held = { messageId: record.messageId, visibilitySeconds: decision.visibilitySeconds };
    await holdQuietly(record, decision.visibilitySeconds);
    deps.log.info(`held ${message.type} ${message.subject} for ${decision.visibilitySeconds} s: ${reason}`, {
      messageId: record.messageId,
      receiveCount: record.receiveCount,
    });
    throw new MessageHeldError(`held ${message.subject}: ${reason}`);
  }

  /**
   * Copies the message to the dead-letter queue, then acknowledges it. A copy the dead-letter
   * queue will not take (unreachable, no permission) is held like a store failure, under the
   * same bound: past it the message is let go without its copy, with a `lost` line and the
   * metric. (Should even the delete fail, the queue's own redrive takes it at maxReceiveCount.)
   * `state` is the group to hold behind it, if any.
   */
  async function settleDead(record: QueueRecord, state: GroupState | undefined, letter: Letter) {
    const failure = await deadLetter(record, letter);
    if (!failure) return `dead-lettered (${letter.kind}): ${letter.reason}`;
    const what = `${letter.type ?? 'message'} ${letter.subject ?? record.groupId}`;
    const why = letter.reason.startsWith(`${letter.kind}:`)
      ? letter.reason
      : `${letter.kind}: ${letter.reason}`;
    const notCopied = `could not dead-letter it (${why}): ${describe(failure)}`;
    const decision = decideHold(deps.holdPolicy, record.receiveCount, record.firstReceivedAtMs, deps.clock());
    if (decision.kind === 'lost') {
      deps.log.error(`lost ${what} after ${decision.heldSeconds} s: ${notCopied}`, {
        messageId: record.messageId,
      });
      deps.countLost(letter.type ?? 'unknown');
      return `lost: ${notCopied}`;
    }
    if (state) state.held = { messageId: record.messageId, visibilitySeconds: decision.visibilitySeconds };
    await holdQuietly(record, decision.visibilitySeconds);
    deps.log.warn(`held ${what} for ${decision.visibilitySeconds} s: ${notCopied}`, {
      messageId: record.messageId,
      receiveCount: record.receiveCount,
    });
    throw new MessageHeldError(`${what}: the dead-letter queue did not take it`);
  }

  /** Resolves to undefined once the copy is on the dead-letter queue, or to why it is not. */
  async function deadLetter(record: QueueRecord, letter: Letter): Promise<unknown> {
    try {
      await deps.settlement.deadLetter(record, {
        kind: letter.kind,
        reason: letter.reason,
        ...(letter.type ? { type: letter.type } : {}),
        ...(letter.subject ? { subject: letter.subject } : {}),
      });
      return undefined;
    } catch (error) {
      deps.log.error(`could not dead-letter ${record.messageId}`, { error });
      return error ?? new Error('unknown');
    }
  }

  async function holdQuietly(record: QueueRecord, seconds: number) {
    try {
      await deps.settlement.hold(record, seconds);
    } catch (error) {
      // It still goes back, only later: at the queue's own visibility timeout.
      deps.log.warn(`could not shorten the visibility of ${record.messageId}`, { error });
    }
  }

  return { handle };
}

function describe(error: unknown): string {
  if (error instanceof Error)
    return `${error.name}${error.message ? ` (${error.message.slice(0, 200)})` : ''}`;
  return String(error);
}

/**
 * Reads every record once and marks what a newer message of the same subject in this batch
 * sets aside: an upgrade or catch-up followed by another of its subject, and a report that a
 * newer report of its node makes moot (see `coversReport`). Builds are each kept once anyway.
 */
export function planBatch(records: readonly QueueRecord[]): Map<string, Plan> {
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
 * would. So a heartbeat never sets aside an applied report (the store keeps the state a
 * heartbeat does not carry), and an applying report never sets aside an applied one (only an
 * applied report moves the applied revision).
 */
export function coversReport(newer: BatchReport, older: BatchReport): boolean {
  if (newer.body.node !== older.body.node) return false;
  const newerWeight = reportWeight[newer.body.state];
  const olderWeight = reportWeight[older.body.state];
  if (newerWeight < olderWeight) return false;
  if (newer.body.sequence !== older.body.sequence) return newer.body.sequence > older.body.sequence;
  return newerWeight > olderWeight || newer.index < older.index;
}
