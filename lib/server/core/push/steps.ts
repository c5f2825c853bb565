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
  sendInputSchema,
  type unsendableSchema,
} from './flow-schemas.ts';
import type { NodeSend, Pusher, SendOptions } from './pusher.ts';
import { candidatesOf } from './round-candidates.ts';

/**
 * The push flow's three steps, each what one Task of lib/server/flows/push.asl.json runs (on Lambda and
 * in-process alike). The flow state is plain JSON passed from step to step.
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

/** Begin: compose and send the named node (if any); what its mints marked is the first hint. */
export async function beginPush(pusher: Pusher, input: unknown): Promise<FlowState> {
  const parsed = flowInputSchema.parse(input);
  const request = 'nodes' in parsed ? { pushId: parsed.pushId } : parsed;
  const attempt = request.node ? await trySend(pusher, request.node, true) : undefined;
  const named = isSend(attempt) ? attempt : undefined;
  const held = namedHeldBack(attempt);
  return {
    request: {
      node: request.node ?? null,
      full: request.full ?? false,
      maxRounds: request.maxRounds ?? defaultMaxRounds,
      pushId: request.pushId ?? null,
      nodes: 'nodes' in parsed ? [...new Set(parsed.nodes)].sort() : null,
      pairing: 'nodes' in parsed,
      rollout: 'nodes' in parsed ? (parsed.rollout ?? null) : null,
    },
    pushed: named ? { node: named.node, revision: named.revision } : null,
    flushed: [],
    round: 0,
    hints: named ? [...named.marked] : [],
    batches: [],
    batchRecord: null,
    done: false,
    behind: [],
    unsendable: isUnsendable(attempt) ? [attempt] : [],
    heldBack: held,
    settled: settledBy(attempt),
  };
}

/**
 * FindBehind: folds the last round's sends in, then finds what is behind now. Marks are read
 * (durable, so a change made before this push is seen), joined with what this push's own
 * mints marked (so an index that lags cannot hide them). At the bound, what is left is checked
 * by composing, so `behind` names exactly the nodes that are behind.
 */
export async function findBehind(
  pusher: Pusher,
  input: unknown,
  progress?: ProgressNotes,
): Promise<FlowState> {
  const state = flowStateSchema.parse(input);
  const results = state.results ?? [];
  const flushed = [...state.flushed, ...results.flatMap((result) => result.sent)];
  const hints = results.flatMap((result) => result.marked);
  const unsendable = [...state.unsendable, ...results.flatMap((result) => result.unsendable)];
  const heldBack = distinct([...state.heldBack, ...results.flatMap((result) => result.heldBack)]);
  // a node a mint of this round marked is looked at again, settled or not: its grant came in
  const minted = new Set(hints);
  const settled = [...new Set([...state.settled, ...results.flatMap((result) => result.settled)])].filter(
    (node) => !minted.has(node),
  );
  const named = new Set(heldBack.map((entry) => entry.node));
  const cannot = new Set([...unsendable.map((entry) => entry.node), ...settled]);
  const candidates = (await candidatesOf(pusher, state, hints, results)).filter((n) => !cannot.has(n)).sort();
  const { results: _folded, ...rest } = state;
  const finished = (behind: string[]) => ({
    ...rest,
    flushed,
    unsendable,
    heldBack,
    settled,
    hints: [],
    batches: [],
    batchRecord: null,
    done: true,
    behind: [...new Set([...behind, ...unsendable.map((entry) => entry.node)])].sort(),
  });
  if (candidates.length === 0) return finished([]);
  // a node whose relation waits with a held-back node is named as such, not as behind
  if (state.round >= state.request.maxRounds)
    return finished(await pusher.behindOf(candidates.filter((n) => !named.has(n))));
  if (state.request.pushId)
    await progress?.round(state.request.pushId, {
      round: state.round + 1,
      flushedCount: flushed.length,
      pending: candidates.length,
      checked: 0,
      sentInRound: 0,
    });
  const batches: string[][] = [];
  for (let index = 0; index < candidates.length; index += batchSize) {
    batches.push(candidates.slice(index, index + batchSize));
  }
  return {
    ...rest,
    flushed,
    unsendable,
    heldBack,
    settled,
    round: state.round + 1,
    hints: [],
    batches,
    batchRecord: batches.length > 1 ? state.request.pushId : null,
    done: false,
    behind: [],
  };
}

/** Send: one Map item, a batch of nodes composed and sent if behind. */
export async function sendBatch(
  pusher: Pusher,
  input: unknown,
  progress?: ProgressNotes,
): Promise<BatchResult> {
  const { nodes, round, pushId, pairing, rollout } = sendInputSchema.parse(input);
  const view = await pusher.holdView(nodes);
  const attempts = await mapLimit(nodes, 4, (node) =>
    trySend(pusher, node, false, { pairing, view, ...(rollout ? { rollout } : {}) }),
  );
  const sends = attempts.filter(isSend);
  const sent = sends.filter((s) => s.sent);
  if (pushId) await progress?.batch(pushId, { checked: nodes.length, sent: sent.length });
  return {
    sent: sent.map((s) => ({ node: s.node, revision: s.revision, round })),
    marked: [...new Set(sends.flatMap((s) => s.marked))],
    unsendable: attempts.filter(isUnsendable),
    paired: pairing ? [...new Set(sends.flatMap((s) => s.pairs))] : [],
    heldBack: attempts.flatMap(namedHeldBack),
    settled: attempts.flatMap(settledBy),
  };
}

/** Each held-back entry once: a node met again in a later round is named once. */
function distinct<
  Entry extends { readonly node: string; readonly by: string; readonly waitsFor?: string | undefined },
>(entries: readonly Entry[]): Entry[] {
  const seen = new Map(entries.map((entry) => [`${entry.node}|${entry.by}|${entry.waitsFor ?? ''}`, entry]));
  return [...seen.values()];
}

/** The push flow's Task functions, keyed by state name: what each Lambda handler calls. */
export function pushTaskFunctions(pusher: Pusher, options: { readonly progress?: ProgressNotes } = {}) {
  return {
    Begin: (input: unknown) => beginPush(pusher, input),
    FindBehind: (input: unknown) => findBehind(pusher, input, options.progress),
    Send: (input: unknown) => sendBatch(pusher, input, options.progress),
  } as const;
}

export type PushTaskFunctions = ReturnType<typeof pushTaskFunctions>;
