import type * as z from 'zod';
import { mapLimit } from '../map-limit.ts';
import { DeclarationTooLargeError, NodeNotFoundError, PushContentionError } from '../mesh/errors.ts';
import {
  type BatchResult,
  batchSize,
  defaultMaxRounds,
  type FlowState,
  flowInputSchema,
  flowStateSchema,
  type ProgressNotes,
  pageSize,
  sendInputSchema,
  type unsendableSchema,
} from './flow-schemas.ts';
import type { NodeSend, Pusher, SendOptions } from './pusher.ts';
import { candidatesOf } from './round-candidates.ts';
import {
  emptyFold,
  type Fold,
  foldSchema,
  MemoryPushWork,
  type PushWork,
  readPage,
  readResults,
  workKeys,
} from './work.ts';

/**
 * The push flow's three steps, each what one Task of lib/server/flows/push.asl.json runs (on Lambda and
 * in-process alike). The flow state is plain JSON passed from step to step, bounded whatever the
 * size of the mesh: its node lists are kept in the push's work (work.ts).
 */

/**
 * One node composed and sent, or why it cannot be: its declaration over the limit (it stays
 * behind, named with the reason), or it was removed while the push ran (nothing to send). A
 * flushed node that lost every race of its send stays marked and is a candidate of the next
 * round: a provider sent in the round its consumers mint into it loses to them (801 consumers
 * of one broker did), and the round after, those mints are done.
 */
async function trySend(
  pusher: Pusher,
  node: string,
  named: boolean,
  options: SendOptions = {},
): Promise<NodeSend | Unsendable | undefined> {
  try {
    return await pusher.sendNode(node, options);
  } catch (error) {
    if (error instanceof DeclarationTooLargeError) return { node, reason: error.message };
    if (error instanceof NodeNotFoundError && !named) return undefined;
    if (error instanceof PushContentionError && !named)
      // in a wave too: a node it pairs with is a candidate of its next round while marked
      return { node, revision: 0, sent: false, marked: [node], pairs: [node] };
    throw error;
  }
}

type Unsendable = z.infer<typeof unsendableSchema>;
const isSend = (value: NodeSend | Unsendable | undefined): value is NodeSend =>
  value !== undefined && 'revision' in value && value.heldBack === undefined;
const heldBackOf = (value: NodeSend | Unsendable | undefined) =>
  value !== undefined && 'revision' in value ? value.heldBack : undefined;
/** Who the push names as held back for one attempt: the node itself, or each relation of it that waits. */
/** Whether the attempt leaves the node as it is for the rest of the push: held back, or unsent with a relation waiting. */
const settledBy = (value: NodeSend | Unsendable | undefined): string[] =>
  value !== undefined &&
  'revision' in value &&
  (value.heldBack !== undefined || (!value.sent && (value.waits?.length ?? 0) > 0))
    ? [value.node]
    : [];
const namedHeldBack = (value: NodeSend | Unsendable | undefined) => {
  const held = heldBackOf(value);
  if (held) return [held];
  return value !== undefined && 'revision' in value ? [...(value.waits ?? [])] : [];
};
const isUnsendable = (value: NodeSend | Unsendable | undefined): value is Unsendable =>
  value !== undefined && 'reason' in value;

/** What the steps keep their lists in, and how long one execution may run before it pauses. */
export type StepOptions = {
  readonly progress?: ProgressNotes;
  /** @default a MemoryPushWork: a plan's, and one process's */
  readonly work?: PushWork;
  /** @default the wall clock */
  readonly now?: () => Date;
  /**
   * How long one execution sends pages before it pauses for the caller to start the next: under
   * Express's 5 minutes by more than a page takes (about 7 s for 1,000 nodes locally).
   * @default executionBudgetMs
   */
  readonly executionBudgetMs?: number;
};

/** Express stops an execution at 5 minutes; a page begun before 4 ends well inside them. */
export const executionBudgetMs = 4 * 60_000;

type Steps = Required<Omit<StepOptions, 'progress'>> & { readonly progress?: ProgressNotes };

const noCounts = { flushed: 0, behind: 0, unsendable: 0, heldBack: 0 };

/**
 * Begin: compose and send the named node (if any); what its send did is round 0's result, folded
 * by the first FindBehind as a batch's would be. A paused execution's state goes on as it was.
 */
export async function beginPush(steps: Steps, pusher: Pusher, input: unknown): Promise<FlowState> {
  const parsed = flowInputSchema.parse(input);
  const startedAt = steps.now().toISOString();
  if ('resume' in parsed) return { ...parsed.resume, paused: false, startedAt, pagesSent: 0 };
  const wave = 'wave' in parsed;
  const request: { node?: string; full?: boolean; maxRounds?: number; pushId?: string | undefined } = wave
    ? { pushId: parsed.pushId }
    : parsed;
  const attempt = request.node ? await trySend(pusher, request.node, true) : undefined;
  const named = isSend(attempt) ? attempt : undefined;
  if (request.node && attempt !== undefined) {
    const result: BatchResult = {
      sent: [],
      marked: named ? [...named.marked] : [],
      unsendable: isUnsendable(attempt) ? [attempt] : [],
      paired: [],
      heldBack: namedHeldBack(attempt),
      settled: settledBy(attempt),
    };
    await steps.work.put(parsed.work, workKeys.result(0, request.node), result);
  }
  return {
    request: {
      node: request.node ?? null,
      full: request.full ?? false,
      maxRounds: request.maxRounds ?? defaultMaxRounds,
      pushId: request.pushId ?? null,
      pairing: wave,
      rollout: wave ? (parsed.rollout ?? null) : null,
    },
    work: parsed.work,
    pushed: named ? { node: named.node, revision: named.revision } : null,
    round: 0,
    pages: 0,
    page: 0,
    batches: [],
    batchRecord: null,
    done: false,
    paused: false,
    startedAt,
    pagesSent: 0,
    counts: noCounts,
  };
}

/**
 * FindBehind: sends the round's next page while it has one; else folds the round's results in
 * (read from the work) and finds what is behind now. Marks are read (durable, so a change made
 * before this push is seen), joined with what this push's own mints marked (so an index that
 * lags cannot hide them). At the bound, what is left is checked by composing, so `behind` names
 * exactly the nodes that are behind. Past its time, the execution pauses between pages.
 */
export async function findBehind(steps: Steps, pusher: Pusher, input: unknown): Promise<FlowState> {
  const given = flowStateSchema.parse(input);
  const state = { ...given, pagesSent: given.pagesSent + (given.batches.length > 0 ? 1 : 0), batches: [] };
  if (state.page < state.pages) return nextPage(steps, state);
  const results = await readResults(steps.work, state.work, workKeys.resultsOf(state.round));
  const before =
    state.round === 0
      ? emptyFold
      : foldSchema.parse((await steps.work.read(state.work, workKeys.fold(state.round - 1))) ?? emptyFold);
  const hints = results.flatMap((result) => result.marked);
  const unsendable = [...before.unsendable, ...results.flatMap((result) => result.unsendable)];
  const heldBack = distinct([...before.heldBack, ...results.flatMap((result) => result.heldBack)]);
  // a node a mint of this round marked is looked at again, settled or not: its grant came in
  // (round 0's marks are the named node's, minted before any round)
  const minted = new Set(state.round === 0 ? [] : hints);
  const settled = [...new Set([...before.settled, ...results.flatMap((result) => result.settled)])].filter(
    (node) => !minted.has(node),
  );
  const flushedCount = before.flushedCount + results.reduce((count, result) => count + result.sent.length, 0);
  const fold: Fold = { unsendable, heldBack, settled, flushedCount };
  await steps.work.put(state.work, workKeys.fold(state.round), fold);
  const named = new Set(heldBack.map((entry) => entry.node));
  const cannot = new Set([...unsendable.map((entry) => entry.node), ...settled]);
  const candidates = (await candidatesOf(pusher, steps.work, state, hints, results))
    .filter((n) => !cannot.has(n))
    .sort();
  const finished = async (found: string[]): Promise<FlowState> => {
    const behind = [...new Set([...found, ...unsendable.map((entry) => entry.node)])].sort();
    await steps.work.put(state.work, workKeys.behind, behind);
    return {
      ...state,
      pages: 0,
      page: 0,
      batchRecord: null,
      done: true,
      counts: {
        flushed: flushedCount,
        behind: behind.length,
        unsendable: unsendable.length,
        heldBack: heldBack.length,
      },
    };
  };
  if (candidates.length === 0) return finished([]);
  // a node whose relation waits with a held-back node is named as such, not as behind
  if (state.round >= state.request.maxRounds)
    return finished(await pusher.behindOf(candidates.filter((n) => !named.has(n))));
  const round = state.round + 1;
  if (state.request.pushId)
    await steps.progress?.round(state.request.pushId, {
      round,
      flushedCount,
      pending: candidates.length,
      checked: 0,
      sentInRound: 0,
    });
  const pages: string[][] = [];
  for (let at = 0; at < candidates.length; at += pageSize) pages.push(candidates.slice(at, at + pageSize));
  await mapLimit([...pages.keys()], 4, (index) =>
    steps.work.put(state.work, workKeys.page(round, index), pages[index]),
  );
  return nextPage(
    steps,
    {
      ...state,
      round,
      pages: pages.length,
      page: 0,
      batchRecord: candidates.length > batchSize ? state.request.pushId : null,
      counts: { ...state.counts, flushed: flushedCount },
    },
    pages[0],
  );
}

/** The round's next page in batches, or, past the execution's time and with a page sent, a pause before it. */
async function nextPage(steps: Steps, state: FlowState, known?: string[]): Promise<FlowState> {
  const elapsed = steps.now().getTime() - Date.parse(state.startedAt);
  if (state.pagesSent > 0 && elapsed >= steps.executionBudgetMs) return { ...state, paused: true };
  const names = known ?? (await readPage(steps.work, state.work, workKeys.page(state.round, state.page)));
  const batches: string[][] = [];
  for (let at = 0; at < names.length; at += batchSize) batches.push(names.slice(at, at + batchSize));
  return { ...state, page: state.page + 1, batches };
}

/** What a Send answers into the Map: counts only, which the flow drops (its result is in the work). */
export type SendDone = { readonly checked: number; readonly sent: number };

/** Send: one Map item, a batch of nodes composed and sent if behind; what it did is kept in the work. */
export async function sendBatch(steps: Steps, pusher: Pusher, input: unknown): Promise<SendDone> {
  const { nodes, round, pushId, pairing, rollout, work } = sendInputSchema.parse(input);
  const view = await pusher.holdView(nodes);
  const attempts = await mapLimit(nodes, 4, (node) =>
    trySend(pusher, node, false, { pairing, view, ...(rollout ? { rollout } : {}) }),
  );
  const sends = attempts.filter(isSend);
  const sent = sends.filter((s) => s.sent);
  const result: BatchResult = {
    sent: sent.map((s) => ({ node: s.node, revision: s.revision, round })),
    marked: [...new Set(sends.flatMap((s) => s.marked))],
    unsendable: attempts.filter(isUnsendable),
    paired: pairing ? [...new Set(sends.flatMap((s) => s.pairs))] : [],
    heldBack: attempts.flatMap(namedHeldBack),
    settled: attempts.flatMap(settledBy),
  };
  const first = nodes[0];
  if (first !== undefined) await steps.work.put(work, workKeys.result(round, first), result);
  if (pushId) await steps.progress?.batch(pushId, { checked: nodes.length, sent: sent.length });
  return { checked: nodes.length, sent: sent.length };
}

/** Each held-back entry once: a node met again in a later round is named once. */
function distinct<
  Entry extends { readonly node: string; readonly by: string; readonly waitsFor?: string | undefined },
>(entries: readonly Entry[]): Entry[] {
  const seen = new Map(entries.map((entry) => [`${entry.node}|${entry.by}|${entry.waitsFor ?? ''}`, entry]));
  return [...seen.values()];
}

/**
 * The push flow's Task functions, keyed by state name: what each Lambda handler calls; and the
 * work they keep their lists in, which the push's outcome is read from (outcomeOfWork).
 */
export function pushTaskFunctions(pusher: Pusher, options: StepOptions = {}) {
  const steps: Steps = {
    work: options.work ?? new MemoryPushWork(),
    now: options.now ?? (() => new Date()),
    executionBudgetMs: options.executionBudgetMs ?? executionBudgetMs,
    ...(options.progress ? { progress: options.progress } : {}),
  };
  return {
    Begin: (input: unknown) => beginPush(steps, pusher, input),
    FindBehind: (input: unknown) => findBehind(steps, pusher, input),
    Send: (input: unknown) => sendBatch(steps, pusher, input),
    work: steps.work,
  } as const;
}

export type PushTaskFunctions = ReturnType<typeof pushTaskFunctions>;
