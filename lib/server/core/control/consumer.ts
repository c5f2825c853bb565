import { type CodedLine, logLine, say } from '../coded-lines.ts';
import { describeCause } from '../unavailable.ts';
import { deadLetterNoteOf } from './dead-letter-notes.ts';
import { HeldBehindError, MessageHeldError, StaleReportError } from './errors.ts';
import { decideHold, type HoldPolicy } from './hold.ts';
import { type About, consumerLines } from './log-lines.ts';
import type { ControlMessage } from './messages.ts';
import { type Outcome, outcomeOfError } from './outcome.ts';
import { planBatch } from './plan.ts';
import type { DeadLetterKind, DeadLetterLog, QueueRecord, QueueSettlement } from './ports.ts';
import { type SettleDeps, settleMessage } from './settle.ts';

export type ConsumerDeps = SettleDeps & {
  readonly settlement: QueueSettlement;
  readonly holdPolicy: HoldPolicy;
  /** Milliseconds since the epoch; injected so the bound can be tested without waiting. */
  readonly clock: () => number;
  /** Counts a message let go past the bound (a Powertools metric on AWS). */
  readonly countLost: (type: string) => void;
  /** Notes each message let go or dead-lettered where operators can list it; best effort. */
  readonly deadLetterNotes?: DeadLetterLog;
};

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
  const plans = planBatch(records, deps.now());
  const groups = new Map<string, GroupState>();
  const log = <Fields extends object>(
    line: CodedLine<Fields>,
    fields: Fields,
    extra?: Record<string, unknown>,
  ) => logLine(deps.log, say(line, fields), extra);

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
      log(
        consumerLines.malformed,
        { group: record.groupId, reason: plan.reason },
        { messageId: record.messageId },
      );
      // A malformed message does not hold its group: nothing after it depends on it.
      return settleDead(record, undefined, {
        kind: 'malformed',
        reason: plan.reason,
        type: plan.type,
        subject: plan.subject,
      });
    }
    const { message } = plan;
    const about = aboutMessage(message);
    const messageId = { messageId: record.messageId };
    if (plan.setAsideBy) {
      log(consumerLines.setAside, { ...about, newer: plan.setAsideBy }, messageId);
      return `set aside by newer ${plan.setAsideBy}`;
    }
    let outcome: Outcome;
    let stale = false;
    try {
      outcome = { kind: 'ack', note: await settleMessage(message, record.messageId, deps) };
    } catch (error) {
      outcome = outcomeOfError(error);
      stale = error instanceof StaleReportError;
      if (outcome.kind !== 'ack') log(consumerLines.failed, { ...about, reason: outcome.reason }, { error });
    }
    switch (outcome.kind) {
      case 'ack':
        log(
          stale ? consumerLines.superseded : consumerLines.settled,
          { ...about, note: outcome.note },
          messageId,
        );
        return outcome.note;
      case 'deadLetter':
        return settleDead(record, state, {
          kind: outcome.dead,
          reason: outcome.reason,
          type: message.type,
          subject: message.subject,
        });
      case 'hold':
        return settleUntaken(record, state, message, outcome.reason);
    }
  }

  /** The store could not take the message: held, or past the bound let go with a copy and a lost line. */
  function settleUntaken(record: QueueRecord, state: GroupState, message: ControlMessage, reason: string) {
    const about = aboutMessage(message);
    return holdOrLetGo(record, state, { about, reason, line: consumerLines.held }, async (seconds) => {
      const letter: Letter = { kind: 'lost', reason, ...messageAbout(message) };
      const failure = await deadLetter(record, letter);
      const notCopied = failure ? `; could not dead-letter it: ${describeCause(failure)}` : '';
      if (failure) await noteDeadLetter(record, { ...letter, reason: `${reason}${notCopied}` }, false);
      log(
        consumerLines.lost,
        { ...about, seconds, reason: `${reason}${notCopied}` },
        { messageId: record.messageId },
      );
      deps.countLost(message.type);
      return failure ? `lost: ${reason}${notCopied}` : `dead-lettered (lost): ${reason}`;
    });
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
    const about = { type: letter.type ?? 'message', subject: letter.subject ?? record.groupId };
    const why = letter.reason.startsWith(`${letter.kind}:`)
      ? letter.reason
      : `${letter.kind}: ${letter.reason}`;
    const notCopied = `could not dead-letter it (${why}): ${describeCause(failure)}`;
    const held = { about, reason: notCopied, line: consumerLines.heldNotCopied };
    return holdOrLetGo(record, state, held, async (seconds) => {
      log(consumerLines.lost, { ...about, seconds, reason: notCopied }, { messageId: record.messageId });
      deps.countLost(letter.type ?? 'unknown');
      await noteDeadLetter(record, { ...letter, kind: 'lost', reason: notCopied }, false);
      return `lost: ${notCopied}`;
    });
  }

  /**
   * The one hold-or-let-go decision (lib/server/core/control/hold.ts): within the bound the message is
   * hidden for its wait and goes back, its group behind it; past the bound `letGo` says what
   * became of it and it is acknowledged.
   */
  async function holdOrLetGo(
    record: QueueRecord,
    state: GroupState | undefined,
    held: { readonly about: About; readonly reason: string; readonly line: typeof consumerLines.held },
    letGo: (heldSeconds: number) => Promise<string>,
  ): Promise<string> {
    const decision = decideHold(deps.holdPolicy, record.receiveCount, record.firstReceivedAtMs, deps.clock());
    if (decision.kind === 'lost') return letGo(decision.heldSeconds);
    if (state) state.held = { messageId: record.messageId, visibilitySeconds: decision.visibilitySeconds };
    await holdQuietly(record, decision.visibilitySeconds);
    const { about, reason } = held;
    log(
      held.line,
      { ...about, seconds: decision.visibilitySeconds, reason },
      { messageId: record.messageId, receiveCount: record.receiveCount },
    );
    throw new MessageHeldError(`held ${about.type} ${about.subject}: ${reason}`);
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
      await noteDeadLetter(record, letter, true);
      return undefined;
    } catch (error) {
      log(consumerLines.notDeadLettered, { messageId: record.messageId }, { error });
      return error ?? new Error('unknown');
    }
  }

  /** A note that cannot be written is logged: the copy, the lost line and the metric still say it. */
  async function noteDeadLetter(record: QueueRecord, letter: Letter, copied: boolean) {
    if (!deps.deadLetterNotes) return;
    try {
      await deps.deadLetterNotes.note(deadLetterNoteOf(record, letter, copied, deps.now()));
    } catch (error) {
      log(consumerLines.deadLetterNotNoted, { messageId: record.messageId }, { error });
    }
  }

  async function holdQuietly(record: QueueRecord, seconds: number) {
    try {
      await deps.settlement.hold(record, seconds);
    } catch (error) {
      // It still goes back, only later: at the queue's own visibility timeout.
      log(consumerLines.visibilityKept, { messageId: record.messageId }, { error });
    }
  }

  return { handle };
}

const messageAbout = (message: ControlMessage) => ({ type: message.type, subject: message.subject });

/** What a line says the message is about; a report's node and sequence too, as the fault rig counts by them. */
const aboutMessage = (message: ControlMessage): About =>
  message.type === 'report'
    ? {
        ...messageAbout(message),
        node: message.body.node,
        sequence: message.body.sequence,
        state: message.body.state,
      }
    : messageAbout(message);
