import * as z from 'zod';
import { mapLimit } from '../map-limit.ts';
import { nodeName } from '../names.ts';
import type { PushOutcome, PushRequest } from '../ports.ts';
import { DeclarationTooLargeError, NodeNotFoundError, PushContentionError } from './errors.ts';
import type { NodeSend, Pusher } from './push.ts';
import { pushId } from './push-records.ts';
import { candidatesOf } from './round-candidates.ts';

/**
 * The push flow's three steps, each what one Task of lib/flow/push.asl.json runs (on Lambda and
 * in-process alike). The flow state is plain JSON passed from step to step.
 */
const defaultMaxRounds = 5;
/** Nodes per Map item: small enough to keep one send task short, large enough to keep the state small. */
export const batchSize = 25;
/** A wave's nodes, as one rollout's record keeps them (lib/core/rollout/record.ts). */
const maxWaveNodes = 5_000;

const requestFields = {
  node: nodeName.optional(),
  behind: z.boolean().optional(),
  full: z.boolean().optional(),
  maxRounds: z.number().int().min(1).max(50).optional(),
};

const meaningful = <T extends z.ZodType<{ node?: string; behind?: boolean; full?: boolean }>>(schema: T) =>
  schema
    .refine((request) => request.node !== undefined || request.behind === true, {
      message: 'name a node, or ask for behind: true',
    })
    .refine((request) => !request.full || request.behind === true, {
      message: 'full is an audit of push --behind: it needs behind: true',
    });

/** What an operator asks for (`POST /push/plan`, and the push a `POST /push` starts). */
export const pushRequestSchema = meaningful(z.object(requestFields).strict());

/** `POST /push`: the request, and whether to wait for it (`wait: false` answers its id at once). */
export const pushBodySchema = meaningful(
  z.object({ ...requestFields, wait: z.boolean().optional() }).strict(),
);

/**
 * What the flow starts from: the request, and the record it reports its rounds to; or a
 * rollout's wave (`nodes`): those nodes, then only the nodes their sends pair with, never
 * anything else that is behind (docs/decisions/rollouts-in-waves.md).
 */
const flowInputSchema = z.union([
  z.object({ nodes: z.array(nodeName).min(1).max(maxWaveNodes), pushId: pushId.optional() }).strict(),
  meaningful(z.object({ ...requestFields, pushId: pushId.optional() }).strict()),
]);

/** How far a push has come, noted in its record at each round (best effort). */
export type PushProgress = {
  readonly round: number;
  /** Nodes flushed in the rounds before this one. */
  readonly flushedCount: number;
  /** The nodes this round looks at. */
  readonly pending: number;
  /** Of those, looked at so far, and sent so far: counted up by each batch as it finishes. */
  readonly checked?: number;
  readonly sentInRound?: number;
};

/** Where the flow notes its progress: a round as it starts, each batch as it finishes. */
export type ProgressNotes = {
  round(pushId: string, progress: PushProgress): Promise<void>;
  batch(pushId: string, done: { readonly checked: number; readonly sent: number }): Promise<void>;
};

const flushedSchema = z.object({ node: z.string(), revision: z.number(), round: z.number() });
const unsendableSchema = z.object({ node: z.string(), reason: z.string() });
const batchResultSchema = z.object({
  sent: z.array(flushedSchema),
  marked: z.array(z.string()),
  unsendable: z.array(unsendableSchema).default([]),
  /** What the sends pair with: a wave's next candidates. */
  paired: z.array(z.string()).default([]),
});

const flowStateSchema = z.object({
  request: z.object({
    node: z.string().nullable(),
    full: z.boolean(),
    maxRounds: z.number(),
    pushId: z.string().nullable().default(null),
    /** A rollout's wave: the nodes it sends, and its batches answer what they pair with; null, false for a push. */
    nodes: z.array(z.string()).nullable().default(null),
    pairing: z.boolean().default(false),
  }),
  pushed: z.object({ node: z.string(), revision: z.number() }).nullable(),
  flushed: z.array(flushedSchema),
  round: z.number(),
  hints: z.array(z.string()),
  batches: z.array(z.array(z.string())),
  done: z.boolean(),
  behind: z.array(z.string()),
  /** Nodes this push cannot send (their declaration over its limit): never tried again, named at the end. */
  unsendable: z.array(unsendableSchema).default([]),
  /**
   * The record this round's batches count themselves into: null for a push kept in no record,
   * and for a round of one batch, whose end the next round's note (or the outcome) follows at once.
   */
  batchRecord: z.string().nullable().default(null),
  results: z.array(batchResultSchema).optional(),
});
export type FlowState = z.infer<typeof flowStateSchema>;

const sendInputSchema = z.object({
  nodes: z.array(nodeName).max(100),
  round: z.number().int().min(1),
  /** The record the batch counts itself into when done (the flow state's `batchRecord`), or null. */
  pushId: z.string().nullable().default(null),
  /** Answer what the sends pair with (a wave); an ordinary push never needs it, and a provider's could be long. */
  pairing: z.boolean().default(false),
});
export type BatchResult = z.infer<typeof batchResultSchema>;

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
  pairing = false,
): Promise<NodeSend | Unsendable | undefined> {
  try {
    return await pusher.sendNode(node, { pairing });
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
  value !== undefined && 'revision' in value;
const isUnsendable = (value: NodeSend | Unsendable | undefined): value is Unsendable =>
  value !== undefined && 'reason' in value;

/** Begin: compose and send the named node (if any); what its mints marked is the first hint. */
export async function beginPush(pusher: Pusher, input: unknown): Promise<FlowState> {
  const parsed = flowInputSchema.parse(input);
  const request = 'nodes' in parsed ? { pushId: parsed.pushId } : parsed;
  const attempt = request.node ? await trySend(pusher, request.node, true) : undefined;
  const named = isSend(attempt) ? attempt : undefined;
  return {
    request: {
      node: request.node ?? null,
      full: request.full ?? false,
      maxRounds: request.maxRounds ?? defaultMaxRounds,
      pushId: request.pushId ?? null,
      nodes: 'nodes' in parsed ? [...new Set(parsed.nodes)].sort() : null,
      pairing: 'nodes' in parsed,
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
  const cannot = new Set(unsendable.map((entry) => entry.node));
  const candidates = (await candidatesOf(pusher, state, hints, results)).filter((n) => !cannot.has(n)).sort();
  const { results: _folded, ...rest } = state;
  const finished = (behind: string[]) => ({
    ...rest,
    flushed,
    unsendable,
    hints: [],
    batches: [],
    batchRecord: null,
    done: true,
    behind: [...new Set([...behind, ...cannot])].sort(),
  });
  if (candidates.length === 0) return finished([]);
  if (state.round >= state.request.maxRounds) return finished(await pusher.behindOf(candidates));
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
  const { nodes, round, pushId, pairing } = sendInputSchema.parse(input);
  const attempts = await mapLimit(nodes, 4, (node) => trySend(pusher, node, false, pairing));
  const sends = attempts.filter(isSend);
  const sent = sends.filter((s) => s.sent);
  if (pushId) await progress?.batch(pushId, { checked: nodes.length, sent: sent.length });
  return {
    sent: sent.map((s) => ({ node: s.node, revision: s.revision, round })),
    marked: [...new Set(sends.flatMap((s) => s.marked))],
    unsendable: attempts.filter(isUnsendable),
    paired: pairing ? [...new Set(sends.flatMap((s) => s.pairs))] : [],
  };
}

/** The push contract (docs/http-api.md, `POST /push`), from the flow's last state (what the ASL's final Pass selects). */
const pushOutcomeSchema = z.object({
  pushed: z.object({ node: z.string(), revision: z.number() }).nullable(),
  flushed: z.array(flushedSchema),
  rounds: z.number(),
  behind: z.array(z.string()),
  unsendable: z.array(unsendableSchema).default([]),
});

/** The contract from the flow's output; `unsendable` only when some node could not be sent. */
export function outcomeOf(output: unknown): PushOutcome {
  const { unsendable, ...outcome } = pushOutcomeSchema.parse(output);
  return unsendable.length > 0 ? { ...outcome, unsendable } : outcome;
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

/**
 * The flow's steps run in-process, sequenced as lib/flow/push.asl.json sequences them (Begin,
 * then FindBehind and a Map of Send until done), for what must not start a state machine: a
 * plan (lib/core/mesh/plan.ts). test/unit/push-plan.test.ts holds it to the ASL's outcomes.
 */
export async function runPushSteps(tasks: PushTaskFunctions, request: PushRequest): Promise<PushOutcome> {
  let state = await tasks.FindBehind(await tasks.Begin(request));
  while (!state.done) {
    const round = state.round;
    const { pushId, pairing } = state.request;
    const results = await Promise.all(
      state.batches.map((nodes) => tasks.Send({ nodes, round, pushId, pairing })),
    );
    state = await tasks.FindBehind({ ...state, results });
  }
  return outcomeOf({ ...state, rounds: state.round });
}
