import type { ReportedHealth, ReportedOutput, RevertCause } from '../../../server/core/health.ts';
import type { HostFacts } from '../../../server/core/mesh/host-facts.ts';
import type { NodeSignal, SignalChannel } from '../../../server/core/signal/channel.ts';

/** What the host agent needs from the control plane, from the broker and from the machine it runs on. */

export type FetchedDeclaration = (
  | { readonly status: 'unchanged' }
  | { readonly status: 'not-sent' }
  | { readonly status: 'changed'; readonly etag: string; readonly revision: number; readonly body: string }
) & {
  /** Where the node's signal is, when the control plane named a broker (the `Mesh-Signal` header). */
  readonly signal?: SignalChannel | undefined;
};

export type HostReport = {
  readonly sequence: number;
  readonly state: 'applying' | 'applied' | 'failed' | 'heartbeat';
  readonly revision: number;
  readonly step?: string;
  /** With applied and failed: the declaration's modules and their versions. */
  readonly modules?: Readonly<Record<string, string | null>>;
  /** The node's health as the agent sees it now: every report carries it. */
  readonly health?: ReportedHealth;
  /** The ends of the apply command's stderr and the check's output, secrets redacted. */
  readonly output?: ReportedOutput;
  /** With failed: the agent gave the revision up and applied its last good one again. */
  readonly revert?: {
    readonly to: number;
    readonly cause: RevertCause;
    readonly ok: boolean;
    readonly modules?: Readonly<Record<string, string | null>>;
  };
  /** What the machine is: in the first report after the agent starts, and when it changed since the last one taken. */
  readonly facts?: HostFacts;
  readonly sentAt: string;
};

/** The control plane as a host sees it: every call signed with the node's key. */
export interface ControlPlane {
  /** GET the node's declaration, conditional on the ETag last applied. */
  fetchDeclaration(etag: string | undefined): Promise<FetchedDeclaration>;
  sendReport(report: HostReport): Promise<void>;
}

/** `output`: the end of the apply command's stderr, as it wrote it (redacted before it leaves the node). */
export type ApplyResult = ({ readonly ok: true } | { readonly ok: false; readonly reason: string }) & {
  readonly output?: string;
};

/** Runs the operator's apply command on a declaration file. */
export interface Applier {
  apply(declarationPath: string, revision: number, signal: AbortSignal): Promise<ApplyResult>;
}

/**
 * One run of the operator's check command: healthy when it exited 0. `reason` says how it ended
 * when not (`the check exited 1`, `timed out after 10 s`); `output` is the end of what it wrote.
 */
export type CheckResult = { readonly healthy: boolean; readonly reason: string; readonly output: string };

/** Runs the operator's check command on the declaration applied (`mesh-host run --check`). */
export interface HealthCheck {
  check(declarationPath: string, revision: number, signal: AbortSignal): Promise<CheckResult>;
}

export type OpenedDeclaration =
  | { readonly ok: true; readonly body: string }
  | { readonly ok: false; readonly reason: string };

/** Opens what was sealed to this node in a fetched declaration: the hook is handed it opened. */
export interface DeclarationOpener {
  open(body: string): Promise<OpenedDeclaration>;
}

/** What the agent remembers across restarts, in DIR. */
export type AgentState = {
  readonly appliedEtag?: string;
  readonly appliedRevision?: number;
  readonly lastSequence: number;
  /**
   * A revision the agent gave up and went back from (`--revert-on-failure`,
   * `--revert-after-cutoff`): never applied again; the next revision sent is.
   */
  readonly revertedEtag?: string;
};

/** The last declaration that was applied and healthy (or applied, with no check): what a revert applies again. */
export type GoodDeclaration = {
  readonly revision: number;
  readonly etag: string;
  /** As the apply command was handed it: secrets opened. */
  readonly body: string;
};

export interface AgentStateStore {
  load(): Promise<AgentState>;
  save(state: AgentState): Promise<void>;
  /** Writes the declaration where the apply command reads it, atomically; returns its path. */
  writeDeclaration(body: string): Promise<string>;
  /** Where the apply command's declaration is written, and what was last written there (none before the first). */
  readDeclaration(): Promise<{ readonly path: string; readonly body: string | undefined }>;
  /** Keeps the last good declaration (atomically, mode 0600, beside the declaration). */
  keepGood(good: GoodDeclaration): Promise<void>;
  /** The last good declaration kept; undefined when none is, or it cannot be read. */
  lastGood(): Promise<GoodDeclaration | undefined>;
}

export type SignalHandlers = {
  /** A signal on the node's topic: the retained one right after subscribing, then each new one. */
  readonly signal: (signal: NodeSignal) => void;
  /** The connection is gone (the broker went away or dropped it); never called after close(). */
  readonly lost: (reason: string) => void;
};

/** The node's connection to the broker: one at a time, connected and subscribed by open(). */
export interface SignalLink {
  /** Connects with a fresh password and subscribes; rejects, saying why, when the broker cannot be reached or refuses. */
  open(channel: SignalChannel, handlers: SignalHandlers): Promise<void>;
  /** Disconnects, if connected. */
  close(): Promise<void>;
}

/** What came of asking for another agent version: installed as the supervisor's trial, or why not. */
export type UpgradeAttempt =
  | { readonly installed: true }
  | { readonly installed: false; readonly reason: string };

/**
 * Installs the agent version a declaration names (`agent: {version}`): the agent exits once one
 * is installed, for its supervisor to start it (lib/clients/host/agent-upgrade.ts). Throws
 * ControlPlaneUnavailableError when the release could not be fetched: the loop tries again.
 */
export interface AgentUpgrader {
  /** The version this agent runs. */
  readonly version: string;
  upgrade(version: string): Promise<UpgradeAttempt>;
}
