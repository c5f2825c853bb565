import * as z from 'zod';
import type { HeldBack } from '../hold/held-back.ts';
import { nodeName } from '../names.ts';
import type { PushOutcome } from './ports.ts';
import { pushId } from './records.ts';

/**
 * The push flow's requests and states (lib/server/flows/push.asl.json passes them from Task to Task):
 * what an operator asks, what the flow starts from, what each round and batch carries, and the
 * push contract read from its last state. The steps are in push-steps.ts.
 */
export const defaultMaxRounds = 5;
/** Nodes per Map item: small enough to keep one send task short, large enough to keep the state small. */
export const batchSize = 25;
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

/**
 * What the flow starts from: the request, and the record it reports its rounds to; or a
 * rollout's wave (`nodes`): those nodes, then only the nodes their sends pair with, never
 * anything else that is behind (docs/decisions/rollouts-in-waves.md).
 */
export const flowInputSchema = z.union([
  z
    .object({
      nodes: z.array(nodeName).min(1).max(maxWaveNodes),
      /** The rollout whose wave this is: its own nodes are not held back from it. */
      rollout: z.string().min(1).max(64).optional(),
      pushId: pushId.optional(),
    })
    .strict(),
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

export const flowStateSchema = z.object({
  request: z.object({
    node: z.string().nullable(),
    full: z.boolean(),
    maxRounds: z.number(),
    pushId: z.string().nullable().default(null),
    /** A rollout's wave: the nodes it sends, and its batches answer what they pair with; null, false for a push. */
    nodes: z.array(z.string()).nullable().default(null),
    pairing: z.boolean().default(false),
    /** The rollout whose wave this is; null for a push. */
    rollout: z.string().nullable().default(null),
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
  /** Nodes this push left alone because they are held back (docs/decisions/held-back.md): named at the end. */
  heldBack: z.array(heldBackSchema).default([]),
  /**
   * Nodes the push met held back, or unsent because nothing but a relation waiting with a
   * held-back node differs: never tried again in this push. A node sent with a relation waiting
   * stays a candidate: a mint into it in a later round sends it again.
   */
  settled: z.array(z.string()).default([]),
  /**
   * The record this round's batches count themselves into: null for a push kept in no record,
   * and for a round of one batch, whose end the next round's note (or the outcome) follows at once.
   */
  batchRecord: z.string().nullable().default(null),
  results: z.array(batchResultSchema).optional(),
});
export type FlowState = z.infer<typeof flowStateSchema>;

export const sendInputSchema = z.object({
  nodes: z.array(nodeName).max(100),
  round: z.number().int().min(1),
  /** The record the batch counts itself into when done (the flow state's `batchRecord`), or null. */
  pushId: z.string().nullable().default(null),
  /** Answer what the sends pair with (a wave); an ordinary push never needs it, and a provider's could be long. */
  pairing: z.boolean().default(false),
  /** The rollout whose wave this batch is part of, or null. */
  rollout: z.string().nullable().default(null),
});
export type BatchResult = z.infer<typeof batchResultSchema>;

/** The push contract (docs/http-api.md, `POST /push`), from the flow's last state (what the ASL's final Pass selects). */
export const pushOutcomeSchema = z.object({
  pushed: z.object({ node: z.string(), revision: z.number() }).nullable(),
  flushed: z.array(flushedSchema),
  rounds: z.number(),
  behind: z.array(z.string()),
  unsendable: z.array(unsendableSchema).default([]),
  heldBack: z.array(heldBackSchema).default([]),
});

/** The contract from the flow's output; `unsendable` and `heldBack` only when some node is in them. */
export function outcomeOf(output: unknown): PushOutcome {
  const { unsendable, heldBack, ...outcome } = pushOutcomeSchema.parse(output);
  return {
    ...outcome,
    ...(unsendable.length > 0 ? { unsendable } : {}),
    ...(heldBack.length > 0 ? { heldBack: heldBack.map(withoutUnset) } : {}),
  };
}

const withoutUnset = (held: z.infer<typeof heldBackSchema>): HeldBack =>
  held.waitsFor === undefined ? { node: held.node, by: held.by } : { ...held, waitsFor: held.waitsFor };
