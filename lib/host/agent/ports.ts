import type { NodeSignal, SignalChannel } from '../../core/signal/channel.ts';

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
  readonly sentAt: string;
};

/** The control plane as a host sees it: every call signed with the node's key. */
export interface ControlPlane {
  /** GET the node's declaration, conditional on the ETag last applied. */
  fetchDeclaration(etag: string | undefined): Promise<FetchedDeclaration>;
  sendReport(report: HostReport): Promise<void>;
}

export type ApplyResult = { readonly ok: true } | { readonly ok: false; readonly reason: string };

/** Runs the operator's apply command on a declaration file. */
export interface Applier {
  apply(declarationPath: string, revision: number, signal: AbortSignal): Promise<ApplyResult>;
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
};

export interface AgentStateStore {
  load(): Promise<AgentState>;
  save(state: AgentState): Promise<void>;
  /** Writes the declaration where the apply command reads it, atomically; returns its path. */
  writeDeclaration(body: string): Promise<string>;
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
