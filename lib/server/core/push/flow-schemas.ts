import * as z from 'zod';
import type { HeldBack } from '../hold/held-back.ts';
import { nodeName } from '../names.ts';
import type { PushOutcome } from './ports.ts';
import { pushId } from './records.ts';

/** Nodes per Map item: small enough to keep one send task short, large enough to keep the pages few. */
export const batchSize = 25;
/**
 * Nodes a page of a round keeps: what one Map runs, in batches of `batchSize`. The page is the
 * largest list the state carries: 1,000 names of at most 63 characters are about 66 KB.
 */
export const pageSize = 1_000;

/**
 * The push flow's requests and states (lib/server/flows/push.asl.json passes them from Task to Task):
 * what an operator asks, what the flow starts from, what each round and batch carries, and the
 * push contract read from its last state. The steps are in push-steps.ts.
 */
export const defaultMaxRounds = 5;
/** A wave's nodes, as one rollout's record keeps them (lib/server/core/rollout/record.ts). */
export const maxWaveNodes = 5_000;

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

/** Where a push keeps its node lists while its flow runs (work.ts): its own id, or one made for a plan. */
export const workId = z.string().regex(/^[0-9A-Za-z-]{1,64}$/, 'a work id is letters, digits and dashes');

/**
 * What the flow starts from, always small (an execution's input is held to 256 KiB): the
 * request and the work its lists are kept under; or a rollout's wave, whose nodes were kept in
 * the work before the flow started (`wave`): those nodes, then only the nodes their sends pair
 * with, never anything else that is behind (docs/decisions/rollouts-in-waves.md); or the state
 * an execution paused with, to go on from (`resume`).
 */
export const flowStartSchema = z.union([
  z
    .object({
      wave: z.literal(true),
      work: workId,
      /** The rollout whose wave this is: its own nodes are not held back from it. */
      rollout: z.string().min(1).max(64).optional(),
      pushId: pushId.optional(),
    })
    .strict(),
  meaningful(z.object({ ...requestFields, pushId: pushId.optional(), work: workId }).strict()),
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

export const flushedSchema = z.object({ node: z.string(), revision: z.number(), round: z.number() });
export const unsendableSchema = z.object({ node: z.string(), reason: z.string() });
export const heldBackSchema = z.object({ node: z.string(), by: z.string(), waitsFor: z.string().optional() });
export const batchResultSchema = z.object({
  sent: z.array(flushedSchema),
  marked: z.array(z.string()),
  unsendable: z.array(unsendableSchema).default([]),
  /** What the sends pair with: a wave's next candidates. */
  paired: z.array(z.string()).default([]),
  /** Nodes left alone: held back by a rollout or a freeze, or waiting with a held-back node. */
  heldBack: z.array(heldBackSchema).default([]),
  /** Nodes this push leaves as they are: held back, or not sent as nothing but a waiting relation differs. */
  settled: z.array(z.string()).default([]),
});

/**
 * The flow state (lib/server/flows/push.asl.json): the request, ids, counts, and the names of one
 * page of a round, never more. The node lists (the round's candidates, each batch's sends, what
 * the push holds back, leaves or cannot send) are in the push's work (work.ts), so the state
 * stays under Step Functions' 256 KiB at any size of the mesh (about 70 KB with a full page of
 * 63-character names; test/unit/push-state-bound.test.ts measures it).
 */
export const flowStateSchema = z.object({
  request: z.object({
    node: z.string().nullable(),
    full: z.boolean(),
    maxRounds: z.number(),
    pushId: z.string().nullable().default(null),
    /** A rollout's wave: its nodes are in the work, and its batches answer what they pair with. */
    pairing: z.boolean().default(false),
    /** The rollout whose wave this is; null for a push. */
    rollout: z.string().nullable().default(null),
  }),
  work: workId,
  pushed: z.object({ node: z.string(), revision: z.number() }).nullable(),
  round: z.number().int().min(0),
  /** The round's pages in the work, and the next one to send. */
  pages: z.number().int().min(0),
  page: z.number().int().min(0),
  /** The page being sent, in batches: what the Map runs. */
  batches: z.array(z.array(z.string())).max(pageSize / batchSize),
  /**
   * The record this round's batches count themselves into: null for a push kept in no record,
   * and for a round of one batch, whose end the next round's note (or the outcome) follows at once.
   */
  batchRecord: z.string().nullable().default(null),
  done: z.boolean(),
  /** This execution has run its time (Express's 5 minutes): the caller starts another from this state. */
  paused: z.boolean().default(false),
  /** When this execution started, and the pages it has sent: an execution pauses only after sending one. */
  startedAt: z.string(),
  pagesSent: z.number().int().min(0).default(0),
  /** How many the push has flushed (in rounds before this one), and, at the end, names as behind, unsendable, held back. */
  counts: z.object({
    flushed: z.number().int().min(0),
    behind: z.number().int().min(0),
    unsendable: z.number().int().min(0),
    heldBack: z.number().int().min(0),
  }),
});
export type FlowState = z.infer<typeof flowStateSchema>;

/** What the flow starts from, parsed: a request, a wave, or a paused execution's state. */
export const flowInputSchema = z.union([z.object({ resume: flowStateSchema }).strict(), flowStartSchema]);

export const sendInputSchema = z.object({
  nodes: z.array(nodeName).max(100),
  /** Where the batch keeps what it did (its result is in the work, not in the state). */
  work: workId,
  round: z.number().int().min(1),
  /** The record the batch counts itself into when done (the flow state's `batchRecord`), or null. */
  pushId: z.string().nullable().default(null),
  /** Answer what the sends pair with (a wave); an ordinary push never needs it, and a provider's could be long. */
  pairing: z.boolean().default(false),
  /** The rollout whose wave this batch is part of, or null. */
  rollout: z.string().nullable().default(null),
});
export type BatchResult = z.infer<typeof batchResultSchema>;

/** The flow's last state, as the ASL's final Pass selects it: the lists are read from the work (outcomeOfWork). */
export const flowEndSchema = z.object({
  work: workId,
  pushed: z.object({ node: z.string(), revision: z.number() }).nullable(),
  rounds: z.number(),
});

/** The push contract (docs/http-api.md, `POST /push`) read from the work; `unsendable` and `heldBack` only when some node is in them. */
export function outcomeOf(lists: {
  readonly pushed: PushOutcome['pushed'];
  readonly rounds: number;
  readonly flushed: PushOutcome['flushed'];
  readonly behind: readonly string[];
  readonly unsendable: ReadonlyArray<z.infer<typeof unsendableSchema>>;
  readonly heldBack: ReadonlyArray<z.infer<typeof heldBackSchema>>;
}): PushOutcome {
  const { unsendable, heldBack, ...outcome } = lists;
  return {
    pushed: outcome.pushed,
    flushed: outcome.flushed,
    rounds: outcome.rounds,
    behind: outcome.behind,
    ...(unsendable.length > 0 ? { unsendable } : {}),
    ...(heldBack.length > 0 ? { heldBack: heldBack.map(withoutUnset) } : {}),
  };
}

const withoutUnset = (held: z.infer<typeof heldBackSchema>): HeldBack =>
  held.waitsFor === undefined ? { node: held.node, by: held.by } : { ...held, waitsFor: held.waitsFor };
