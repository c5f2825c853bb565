import type { HeldBack, Holder } from '../hold/held-back.ts';
import type { PushRecordReader, PushRecordWriter } from './records.ts';
import type { PushTaskFunctions } from './steps.ts';

/**
 * The push area's ports (docs/decisions/one-push-leaves-the-mesh-consistent.md): what a push is
 * asked and answers, the flow that runs it, where it is recorded, what a node was last sent.
 * The store compose-and-send stands on is the mesh's (lib/server/core/mesh/store.ts).
 */
export type { PushRecordReader, PushRecordWriter } from './records.ts';
export type { PushStarter } from './runs.ts';
export type { PushTaskFunctions } from './steps.ts';

/** Where every push is recorded: written as it starts, runs and ends, read by the operator's routes. */
export type PushRecords = PushRecordWriter & PushRecordReader;

/** What `push` is asked to do: a named node, or everything behind (`--behind`, `--full` to audit). */
export type PushRequest = {
  readonly node?: string;
  readonly behind?: boolean;
  readonly full?: boolean;
  readonly maxRounds?: number;
  /** The record the flow reports its rounds to (push-records.ts); set by the recorder, not by an operator. */
  readonly pushId?: string;
  /** A rollout's wave: these nodes, then only what they pair with (lib/server/core/push/steps.ts). */
  readonly nodes?: readonly string[];
  /** With `nodes`: the rollout whose wave it is, whose own nodes are not held back from it. */
  readonly rollout?: string;
};

/** The push contract (docs/http-api.md, `POST /push`); `behind` lists what is still behind when the bound is hit. */
export type PushOutcome = {
  readonly pushed: { readonly node: string; readonly revision: number } | null;
  readonly flushed: ReadonlyArray<{
    readonly node: string;
    readonly revision: number;
    readonly round: number;
  }>;
  readonly rounds: number;
  readonly behind: readonly string[];
  /**
   * Nodes of `behind` the push could not send, each with why (a declaration over its size
   * limit); the others were sent all the same. Absent when there are none.
   */
  readonly unsendable?: ReadonlyArray<{ readonly node: string; readonly reason: string }>;
  /**
   * Nodes the push left alone, each with who holds it back (`rollout:<id>`, `freeze:<on>`) and,
   * for a node whose own relation waits, the held-back node it waits for
   * (docs/decisions/held-back.md). Never counted as behind. Absent when there are none.
   */
  readonly heldBack?: readonly HeldBack[];
  /**
   * Who holds nodes back as the push answers (every rollout holding nodes, every freeze in force),
   * each with how many it holds and a few by name: every push names them, whether it met their
   * nodes or not. Absent when nothing holds; added where the push is answered.
   */
  readonly holders?: readonly Holder[];
  /**
   * Set when the outcome was read back from the push's record, whose lists keep their first
   * nodes (at most 1,000, and 80 KB of JSON): how many were flushed, and how many are behind, in all.
   */
  readonly flushedCount?: number;
  readonly behindCount?: number;
  /** How many were held back in all, when the record's list was cut. */
  readonly heldBackCount?: number;
  /** How many could not be sent in all, when the record's list was cut. */
  readonly unsendableCount?: number;
  /** Set when the outcome was read back from a record one of whose lists was cut. */
  readonly more?: boolean;
};

/**
 * Who asked for a push: an operator (the IAM principal on AWS, `local` locally) or
 * `upgrade <module>`; kept in the push's record (lib/server/core/push/records.ts), never sent to the flow.
 */
export type PushAsker = {
  readonly requestedBy: string;
  /** The id the push's record is kept under; one is made when absent. */
  readonly pushId?: string;
  /** The running record was written already (by the request that started the push elsewhere). */
  readonly started?: boolean;
  /** When the push was last handed on to the invocation running it, and how many times it was. */
  readonly handedOn?: PushHandOvers;
};

export type PushHandOvers = { readonly at: string; readonly count: number };

/**
 * Runs a push's steps in the flow's order, in-process (lib/server/flows/push-definition.ts): a
 * plan runs the push's own steps on a store that writes nowhere, without starting the flow.
 */
export type PushStepsRunner = (tasks: PushTaskFunctions, request: PushRequest) => Promise<PushOutcome>;

/**
 * One invocation's share of a push (push-run): its executions run from `resume` (or from the
 * request) while the invocation has time for another; then the paused state is handed on to a
 * fresh invocation, so no push outlives the Lambda running it (lib/server/core/push/executions.ts).
 */
export type PushLeg = {
  /** The paused state a previous invocation handed on; absent for the push's first leg. */
  readonly resume?: unknown;
  /** Asked at each pause: whether this invocation has time for one more execution. */
  readonly hasTimeFor: () => boolean;
  /** Gives the paused state to a fresh invocation at `at`; a failure fails the push. */
  readonly handOn: (paused: unknown, at: Date) => Promise<void>;
};

/** Runs the push flow: on Step Functions Express when deployed, from the same ASL in-process locally. */
export interface PushFlow {
  push(request: PushRequest, asker?: PushAsker): Promise<PushOutcome>;
  /**
   * Runs one leg of the push: its outcome when the push ended in it, undefined when it was handed
   * on. A flow without legs runs the push whole.
   */
  pushLeg?(request: PushRequest, leg: PushLeg, asker?: PushAsker): Promise<PushOutcome | undefined>;
}

/** What a host fetches: the declaration a node was last sent. */
export type Delivery = {
  readonly node: string;
  readonly revision: number;
  readonly digest: string;
  /** Quoted strong ETag for If-None-Match. */
  readonly etag: string;
  readonly sentAt: string;
  /** Undefined only when the reader was told the caller has this ETag already. */
  readonly declaration: unknown;
};

export interface DeliveryReader {
  /**
   * What the node was last sent. With `known`, a declaration whose ETag the caller already has
   * is not read (its `declaration` is undefined): a host asking If-None-Match costs the head only.
   */
  readDelivery(
    node: string,
    options?: { readonly known?: (etag: string) => boolean },
  ): Promise<Delivery | undefined>;
}
