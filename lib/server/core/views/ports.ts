import type { HealthState, RevertCause } from '../health.ts';
import type { HostFacts } from '../mesh/host-facts.ts';
import type { WaitingRelations } from '../mesh/waiting.ts';
import type { MeshGraph, NodeDetails } from './views.ts';

/** The views' ports: what `mesh status`, `mesh node list|show`, the graph and the console read. */
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
  /** Its health, as its host last reported it (lib/server/core/health.ts); absent until a host reports one. */
  readonly health?: NodeHealth;
  /** The revert its host last reported, while its latest report (not a heartbeat) is that revert. */
  readonly revert?: NodeRevert;
  /** What its host last said of its machine (OS, kernel, architecture, agent, …); absent until it says. */
  readonly facts?: HostFacts;
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

/** The read models of lib/server/core/views/views.ts, for `mesh node list|show`, `mesh graph` and the console. */
export interface MeshViewReader {
  /** Every node with its modules, and every relation. */
  graph(): Promise<MeshGraph>;
  details(node: string): Promise<NodeDetails | undefined>;
}
