import { randomBytes } from 'node:crypto';
import * as z from 'zod';
import type { Actor } from '../audit/record.ts';
import { logLine, say } from '../coded-lines.ts';
import { pushFailures } from '../mesh/errors.ts';
import { pushLines } from '../mesh/log-lines.ts';
import type { Log } from '../ports.ts';
import { describeCause } from '../unavailable.ts';
import type { PushAsker, PushFlow, PushLeg, PushOutcome, PushRequest } from './ports.ts';

/**
 * The record of every push: named, `--behind`, `--full`, and the one inside an upgrade. It is
 * written `running` before the flow starts and `done` when it answers, under an id that sorts by
 * time, so a push can be followed by its id while it runs and the newest are read first.
 */
export type PushRecordOutcome = 'consistent' | 'still-behind' | 'failed';

export type PushRecord = {
  readonly id: string;
  readonly state: 'running' | 'done';
  readonly requestedBy: string;
  readonly startedAt: string;
  readonly finishedAt: string | null;
  readonly request: {
    readonly node: string | null;
    readonly behind: boolean;
    readonly full: boolean;
    readonly maxRounds: number | null;
  };
  readonly outcome: PushRecordOutcome | null;
  readonly pushed: PushOutcome['pushed'];
  /** The first `keptNodesPerList` nodes flushed; `flushedCount` is all of them. */
  readonly flushed: PushOutcome['flushed'];
  readonly flushedCount: number;
  readonly rounds: number | null;
  /** What was still behind at the bound (the first `keptNodesPerList`); `behindCount` is all of them. */
  readonly behind: readonly string[];
  readonly behindCount: number;
  /** The name of what failed (`NodeNotFoundError`, `States.Timeout`, …). */
  readonly error: string | null;
  /** Its message, kept only when its row says operators are told it (`pushFailures`), never a defect's. */
  readonly errorMessage?: string | null;
  /** Set by the flow at each round while it runs (best effort); absent on older records. */
  readonly progress?: {
    readonly round: number;
    readonly flushedCount: number;
    readonly pending: number;
    readonly checked?: number;
    readonly sentInRound?: number;
  };
  /** Nodes that could not be sent, with why (the first `keptNodesPerList`); `unsendableCount` is all of them. */
  readonly unsendable?: PushOutcome['unsendable'];
  readonly unsendableCount?: number;
  /**
   * Set when a list keeps only its first nodes (`keptNodesPerList`, `keptBytesPerList`); the
   * counts are exact. Absent when every list is whole.
   */
  readonly more?: boolean;
  /** Nodes left alone, held back, with who holds them (the first `keptNodesPerList`); `heldBackCount` is all of them. */
  readonly heldBack?: PushOutcome['heldBack'];
  readonly heldBackCount?: number;
  /**
   * When the push was last handed on to a fresh push-run invocation, and how many times it was;
   * absent while its first invocation runs it (lib/server/core/push/executions.ts).
   */
  readonly handedOnAt?: string;
  readonly handOvers?: number;
};

/** The most nodes a record's list keeps. */
export const keptNodesPerList = 1000;

/**
 * The most bytes (as JSON) a record's list keeps: its four lists (flushed, behind, unsendable,
 * held back) take at most 320 KB, so the record stays under 350 KB, inside DynamoDB's 400 KB
 * item, whatever the push's size and its names' length (1,000 63-character names with their
 * reasons or holders are about 130 KB: such a list keeps its first 600 or so).
 */
export const keptBytesPerList = 80_000;

const encoder = new TextEncoder();

/** A list's first entries, up to `keptNodesPerList` and `keptBytesPerList`. */
function keptOf<T>(list: readonly T[]): T[] {
  const kept: T[] = [];
  let bytes = 2;
  for (const entry of list) {
    if (kept.length >= keptNodesPerList) break;
    const size = encoder.encode(JSON.stringify(entry)).length + 1;
    if (bytes + size > keptBytesPerList) break;
    kept.push(entry);
    bytes += size;
  }
  return kept;
}

/** How long a record is kept. */
export const pushRecordDays = 90;

export interface PushRecordWriter {
  /**
   * Writes the running record, with the push's audit record (by whom) in the same write;
   * refused if one is already kept under its id.
   */
  start(record: PushRecord, by: Actor): Promise<void>;
  /** Writes the finished record over the running one (or alone, when the start was not written). */
  finish(record: PushRecord): Promise<void>;
  /** Notes a running push's round as it starts; a record that is done is left as it is. */
  progress(id: string, progress: NonNullable<PushRecord['progress']>): Promise<void>;
  /** Counts a finished batch into the round's progress, atomically (batches finish together). */
  batchDone(id: string, done: { readonly checked: number; readonly sent: number }): Promise<void>;
  /** Notes a running push handed on to a fresh invocation at `at`; a record that is done is left as it is. */
  handedOn(id: string, at: Date): Promise<void>;
}

export interface PushRecordReader {
  /** The newest first, read strongly consistent. */
  list(limit: number): Promise<PushRecord[]>;
  read(id: string): Promise<PushRecord | undefined>;
}

/** `20260722T101500123Z-4f2a9c`: the start time to the millisecond, then six random hex digits. */
export const pushId = z
  .string()
  .regex(/^\d{8}T\d{9}Z-[0-9a-f]{6}$/, 'a push id looks like 20260722T101500123Z-4f2a9c');

export function newPushId(at: Date, random = () => randomBytes(3).toString('hex')): string {
  const stamp = at.toISOString().replace(/[-:.]/g, '');
  return `${stamp}-${random()}`;
}

/** A push flow that keeps the record of every push it runs; a record that cannot be written never stops the push. */
export class RecordedPushFlow implements PushFlow {
  /** The flow whose pushes are recorded. */
  readonly flow: PushFlow;
  readonly #records: PushRecordWriter;
  readonly #log: Log;
  readonly #now: () => Date;
  readonly #finished: ((record: PushRecord) => Promise<void>) | undefined;

  constructor(options: {
    readonly flow: PushFlow;
    readonly records: PushRecordWriter;
    /** Told each push's last record once it is kept: its event (docs/events.md); never throws. */
    readonly finished?: (record: PushRecord) => Promise<void>;
    readonly log: Log;
    readonly now: () => Date;
  }) {
    this.flow = options.flow;
    this.#records = options.records;
    this.#finished = options.finished;
    this.#log = options.log;
    this.#now = options.now;
  }

  async push(request: PushRequest, asker?: PushAsker): Promise<PushOutcome> {
    return (await this.#run(request, asker)) as PushOutcome;
  }

  /**
   * One invocation's leg of the push: its record is finished when the push ends in it, and
   * notes the hand-over when it is handed on (`running` until the last leg ends it).
   */
  pushLeg(request: PushRequest, leg: PushLeg, asker?: PushAsker): Promise<PushOutcome | undefined> {
    return this.#run(request, asker, leg);
  }

  async #run(request: PushRequest, asker?: PushAsker, leg?: PushLeg): Promise<PushOutcome | undefined> {
    const startedAt = this.#now();
    const running = runningRecord(asker?.pushId ?? newPushId(startedAt), request, asker, startedAt);
    // Not an operator's request here (an upgrade's push): the asker is named, the push's id is the request's.
    const by = { principal: running.requestedBy, source: 'control-plane', requestId: running.id };
    if (!asker?.started) await this.#quietly(running, () => this.#records.start(running, by));
    let outcome: PushOutcome | undefined;
    try {
      // Who asked stays the record's; the flow gets the record's id to report its rounds to.
      const asked = { ...request, pushId: running.id };
      if (leg && this.flow.pushLeg) {
        outcome = await this.flow.pushLeg(asked, {
          ...leg,
          // noted first: the next invocation may read the record before this one ends
          handOn: async (paused) => {
            const at = this.#now();
            await this.#quietly(running, () => this.#records.handedOn(running.id, at));
            await leg.handOn(paused, at);
          },
        });
      } else outcome = await this.flow.push(asked);
    } catch (error) {
      const name = nameOf(error);
      const failed = {
        ...finished(running, this.#now()),
        outcome: 'failed' as const,
        error: name,
        errorMessage: pushFailures.named(name)?.messageShown ? (error as Error).message : null,
      };
      await this.#quietly(failed, () => this.#records.finish(failed));
      await this.#finished?.(failed);
      throw error;
    }
    if (outcome === undefined) return undefined;
    const done = doneRecord(running, outcome, this.#now());
    await this.#quietly(done, () => this.#records.finish(done));
    await this.#finished?.(done);
    return outcome;
  }

  async #quietly(record: PushRecord, write: () => Promise<void>) {
    try {
      await write();
    } catch (error) {
      logLine(
        this.#log,
        say(pushLines.recordNotKept, {
          pushId: record.id,
          state: record.state,
          reason: describeCause(error),
        }),
      );
    }
  }
}

export function runningRecord(
  id: string,
  request: PushRequest,
  asker: PushAsker | undefined,
  startedAt: Date,
): PushRecord {
  return {
    id,
    state: 'running',
    requestedBy: asker?.requestedBy ?? 'unknown',
    startedAt: startedAt.toISOString(),
    finishedAt: null,
    request: {
      node: request.node ?? null,
      behind: request.behind ?? false,
      full: request.full ?? false,
      maxRounds: request.maxRounds ?? null,
    },
    outcome: null,
    pushed: null,
    flushed: [],
    flushedCount: 0,
    rounds: null,
    behind: [],
    behindCount: 0,
    error: null,
    ...(asker?.handedOn ? { handedOnAt: asker.handedOn.at, handOvers: asker.handedOn.count } : {}),
  };
}

const finished = (record: PushRecord, at: Date): PushRecord => ({
  ...record,
  state: 'done',
  finishedAt: at.toISOString(),
});

export function doneRecord(running: PushRecord, outcome: PushOutcome, at: Date): PushRecord {
  const flushed = keptOf(outcome.flushed);
  const behind = keptOf(outcome.behind);
  const unsendable = outcome.unsendable ? keptOf(outcome.unsendable) : undefined;
  const heldBack = outcome.heldBack ? keptOf(outcome.heldBack) : undefined;
  const more =
    flushed.length < outcome.flushed.length ||
    behind.length < outcome.behind.length ||
    (unsendable?.length ?? 0) < (outcome.unsendable?.length ?? 0) ||
    (heldBack?.length ?? 0) < (outcome.heldBack?.length ?? 0);
  return {
    ...finished(running, at),
    outcome: outcome.behind.length > 0 ? 'still-behind' : 'consistent',
    pushed: outcome.pushed,
    flushed,
    flushedCount: outcome.flushed.length,
    rounds: outcome.rounds,
    behind,
    behindCount: outcome.behind.length,
    progress: { round: outcome.rounds, flushedCount: outcome.flushed.length, pending: 0 },
    ...(outcome.unsendable ? { unsendable, unsendableCount: outcome.unsendable.length } : {}),
    ...(outcome.heldBack ? { heldBack, heldBackCount: outcome.heldBack.length } : {}),
    ...(more ? { more: true } : {}),
  };
}

/**
 * The push contract read back from a finished record, for an answer given after the flow ran
 * elsewhere; the counts and `more` are added when the record's lists were cut.
 */
export function outcomeOfRecord(record: PushRecord): PushOutcome {
  const cut = record.flushedCount > record.flushed.length || record.behindCount > record.behind.length;
  return {
    pushed: record.pushed,
    flushed: record.flushed,
    rounds: record.rounds ?? 0,
    behind: record.behind,
    ...(record.unsendable?.length ? { unsendable: record.unsendable } : {}),
    ...(record.heldBack?.length ? { heldBack: record.heldBack } : {}),
    ...(cut ? { flushedCount: record.flushedCount, behindCount: record.behindCount } : {}),
    ...((record.heldBackCount ?? 0) > (record.heldBack?.length ?? 0)
      ? { heldBackCount: record.heldBackCount }
      : {}),
    ...((record.unsendableCount ?? 0) > (record.unsendable?.length ?? 0)
      ? { unsendableCount: record.unsendableCount }
      : {}),
    ...(record.more ? { more: true } : {}),
  };
}

/** A failed flow is named by what a Task threw (PushFlowFailedError.error); anything else by its class. */
function nameOf(error: unknown): string {
  const flowError = (error as { error?: unknown }).error;
  if (typeof flowError === 'string' && flowError !== '') return flowError;
  return (error as Error)?.name ?? 'Error';
}

/**
 * The longest one invocation runs a push: push-run, which chains the flow's executions (each
 * under Express's five minutes, lib/server/core/push/executions.ts), is stopped by Lambda at 15
 * minutes and hands the push on before that. A record still `running` that long after its start
 * or its last hand-over was left by a run that ended first, and its outcome was never written.
 */
export const longestPushMs = 15 * 60_000;

export type PushRecordView = Omit<PushRecord, 'state'> & {
  readonly state: 'running' | 'done' | 'unfinished';
};

export function viewOfPushRecord(record: PushRecord, now: Date): PushRecordView {
  const overdue = now.getTime() - Date.parse(record.handedOnAt ?? record.startedAt) > longestPushMs;
  return record.state === 'running' && overdue ? { ...record, state: 'unfinished' } : record;
}

/** A push's progress noted in its record; a note that cannot be written never stops the push. */
export async function noteQuietly(log: Log, pushId: string, note: () => Promise<void>): Promise<void> {
  try {
    await note();
  } catch (error) {
    logLine(log, say(pushLines.progressNotNoted, { pushId, reason: describeCause(error) }));
  }
}
