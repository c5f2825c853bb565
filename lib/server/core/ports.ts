/**
 * The ports one area of Mesh offers another. Each area keeps its own in its ports.ts
 * (lib/core/<area>/ports.ts); only what crosses areas is here, with what any handler may take
 * (the log, the clock, counted occurrences), so the areas can be built and tested apart.
 */

import type { Actor } from './audit/record.ts';
import type { HealthState, RevertCause } from './control/health.ts';
import type { HeldBack, Holder } from './hold/held-back.ts';
import type { WaitingRelations } from './mesh/waiting.ts';
import type { MeshGraph, NodeDetails } from './views.ts';

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
   * Set when the outcome was read back from the push's record, whose lists keep the first
   * 1,000 nodes: how many were flushed, and how many are behind, in all.
   */
  readonly flushedCount?: number;
  readonly behindCount?: number;
  /** How many were held back in all, when the record's list was cut. */
  readonly heldBackCount?: number;
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
};

/** Runs the push flow: on Step Functions Express when deployed, from the same ASL in-process locally. */
export interface PushFlow {
  push(request: PushRequest, asker?: PushAsker): Promise<PushOutcome>;
}

/**
 * Sets a known module's version (some node was assigned it, else ModuleNotFoundError and nothing
 * written), then the version on every carrier's assignment with its stale mark, one transaction
 * per carrier; a carrier already at the version is left as it is. Returns every carrier.
 */
export interface ModuleVersions {
  /**
   * `by`: who asked for the upgrade, for the audit record written with the version. With
   * `carriers: false` (an upgrade in waves) the carriers are listed but not moved: each wave
   * moves its own (`moveCarriers`), so no node is behind on the version before its wave.
   */
  setModuleVersion(
    module: string,
    version: string,
    by: Actor,
    options?: { readonly carriers?: boolean },
  ): Promise<{
    readonly carriers: readonly string[];
    /** The module's version before (null: none), read as the upgrade began: what an undo sets back. */
    readonly previous: string | null;
  }>;
  /**
   * Moves these nodes' assignment of the module to the version, each with its stale mark, one
   * transaction a node; a node that no longer carries it, or is at the version already, is left.
   */
  moveCarriers(module: string, version: string, nodes: readonly string[]): Promise<void>;
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

/** What `mesh status` shows of one node: a read model over the items every area keeps in its partition. */
export type NodeStatus = {
  readonly node: string;
  readonly enrolled: boolean;
  readonly enrolledAt: string | null;
  readonly sentRevision: number | null;
  readonly sentAt: string | null;
  /** The last revision the host reported applied, kept while a newer one is applying or failed. */
  readonly appliedRevision: number | null;
  readonly appliedAt: string | null;
  /** The host's last reported state (`applied`, `applying`, `failed`, …), as reported. */
  readonly reportState: string | null;
  /** Marked possibly behind: something that feeds its declaration changed since it was last sent. */
  readonly behind: boolean;
  /** Connected to the broker now, by its latest lifecycle event; null when its host never connected. */
  readonly online: boolean | null;
  /** The latest of: a report or heartbeat, a connect or disconnect. */
  readonly lastHeard: string | null;
  /** The node's labels (docs/mesh-file.md), present only when it has some. */
  readonly labels?: Readonly<Record<string, string>>;
  /** Its relations not minted for want of an enrolment, as last sent; present only when some wait. */
  readonly waiting?: WaitingRelations;
  /**
   * Who holds it back (`rollout:<id>`, `freeze:<on>`): nothing is sent it until that releases it
   * (docs/decisions/held-back.md). Present only when it is held; set by the views that read holds.
   */
  readonly heldBack?: string;
  /** Its health, as its host last reported it (lib/server/core/control/health.ts); absent until a host reports one. */
  readonly health?: NodeHealth;
  /** The revert its host last reported, while its latest report (not a heartbeat) is that revert. */
  readonly revert?: NodeRevert;
};

export type NodeHealth = {
  readonly state: HealthState;
  /** Whether its host runs a check: `unknown` with a check is a verdict still to come (a wave waits on it). */
  readonly check: boolean;
  /** The revision its host had applied when it judged. */
  readonly revision: number;
  /** Since when it has been in this state, by the control plane's clock (the first report that said so). */
  readonly since: string | null;
  /** When the check last ran, by the host's clock. */
  readonly checkedAt: string | null;
  /** While unhealthy: the first line of the check's output, or how it ended. */
  readonly reason: string | null;
};

export type NodeRevert = {
  /** The revision given up. */
  readonly from: number;
  /** The revision applied again: the last one that was applied and healthy. */
  readonly to: number;
  readonly cause: RevertCause;
  /** Whether applying it again succeeded. */
  readonly ok: boolean;
  /** When it was recorded. */
  readonly at: string | null;
};

export interface StatusReader {
  /** Every node of the mesh, as status shows it. */
  status(): Promise<NodeStatus[]>;
}

/** Where the control plane's lines go: Powertools' logger on AWS and locally, a recording one in tests. */
export type Log = {
  info(message: string, extra?: Record<string, unknown>): void;
  warn(message: string, extra?: Record<string, unknown>): void;
  error(message: string, extra?: Record<string, unknown>): void;
};

/** The read models of lib/server/core/views.ts, for `mesh node list|show`, `mesh graph` and the console. */
export interface MeshViewReader {
  /** Every node with its modules, and every relation. */
  graph(): Promise<MeshGraph>;
  details(node: string): Promise<NodeDetails | undefined>;
}

/** What a handler is given as its clock: the wiring's, or a test's fixed one. */
export type Clock = () => Date;

/**
 * Occurrences counted during an invocation and published once after it, as one metric
 * (lib/server/adapters/counted-metric.ts), so quiet invocations publish nothing.
 */
export interface CountedOccurrences {
  publish(): Promise<void>;
}
