import { HeldBehindError, MessageHeldError } from './errors.ts';
import { decideHold, type HoldPolicy } from './hold.ts';
import { type ControlMessage, parseControlMessage } from './messages.ts';
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
      const letter = {
        kind: 'malformed' as const,
        reason: plan.reason,
        type: plan.type,
        subject: plan.subject,
      };
      if (!(await deadLetter(record, letter))) {
        // Not acknowledged without its copy in the dead-letter queue; it does not hold its group.
        await holdQuietly(record, deps.holdPolicy.backoffSeconds[0] ?? 5);
        throw new MessageHeldError(`malformed message ${record.messageId} could not be dead-lettered`);
      }
      deps.log.warn(`malformed ${record.groupId}: ${plan.reason}`, { messageId: record.messageId });
      return `dead-lettered: ${plan.reason}`;
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
    switch (outcome.kind) {
      case 'ack':
        deps.log.info(`${message.type} ${message.subject}: ${outcome.note}`, { messageId: record.messageId });
        return outcome.note;
      case 'deadLetter':
        return settleDead(record, state, message, outcome.dead, outcome.reason);
      case 'hold':
        return settleHold(record, state, message, outcome.reason);
    }
  }

  async function settleHold(record: QueueRecord, state: GroupState, message: ControlMessage, reason: string) {
    const decision = decideHold(deps.holdPolicy, record.receiveCount, record.firstReceivedAtMs, deps.clock());
    if (decision.kind === 'lost') {
      deps.log.error(`lost ${message.type} ${message.subject} after ${decision.heldSeconds} s: ${reason}`, {
        messageId: record.messageId,
      });
      deps.countLost(message.type);
      return settleDead(record, state, message, 'lost', reason);
    }
    state.held = { messageId: record.messageId, visibilitySeconds: decision.visibilitySeconds };
    await holdQuietly(record, decision.visibilitySeconds);
    deps.log.info(`held ${message.type} ${message.subject} for ${decision.visibilitySeconds} s: ${reason}`, {
      messageId: record.messageId,
      receiveCount: record.receiveCount,
    });
    throw new MessageHeldError(`held ${message.subject}: ${reason}`);
  }

  async function settleDead(
    record: QueueRecord,
    state: GroupState,
    message: ControlMessage,
    kind: DeadLetterKind,
    reason: string,
  ) {
    if (await deadLetter(record, { kind, reason, type: message.type, subject: message.subject })) {
      return `dead-lettered (${kind}): ${reason}`;
    }
    // Without its copy in the dead-letter queue the message is not let go: it stays held.
    const wait = deps.holdPolicy.backoffSeconds[0] ?? 5;
    state.held = { messageId: record.messageId, visibilitySeconds: wait };
    await holdQuietly(record, wait);
    throw new MessageHeldError(`${message.subject}: the dead-letter queue did not take it`);
  }

  async function deadLetter(
    record: QueueRecord,
    letter: { kind: DeadLetterKind; reason: string; type?: string | undefined; subject?: string | undefined },
  ): Promise<boolean> {
    try {
      await deps.settlement.deadLetter(record, {
        kind: letter.kind,
        reason: letter.reason,
        ...(letter.type ? { type: letter.type } : {}),
        ...(letter.subject ? { subject: letter.subject } : {}),
      });
      return true;
    } catch (error) {
      deps.log.error(`could not dead-letter ${record.messageId}`, { error });
      return false;
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

/**
 * Reads every record once and marks what a newer message of the same subject in this batch
 * sets aside: a report with a lower (or repeated) sequence than another of its node, and an
 * upgrade or catch-up followed by another of its subject. Builds are each kept once anyway.
 */
export function planBatch(records: readonly QueueRecord[]): Map<string, Plan> {
  const plans = new Map<string, Plan>();
  const newest = new Map<string, { messageId: string; rank: number }>();
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
    const rank = message.type === 'report' ? message.body.sequence : index;
    const best = newest.get(message.subject);
    if (!best || rank > best.rank) newest.set(message.subject, { messageId: record.messageId, rank });
  });
  for (const [messageId, plan] of plans) {
    if (!plan.ok || plan.message.type === 'build') continue;
    const best = newest.get(plan.message.subject);
    if (best && best.messageId !== messageId) {
      const what = plan.message.type === 'report' ? `report ${best.rank}` : `message ${best.messageId}`;
      plans.set(messageId, { ...plan, setAsideBy: what });
    }
  }
  return plans;
}
