/** What the host agent needs from the control plane and from the machine it runs on. */

export type FetchedDeclaration =
  | { readonly status: 'unchanged' }
  | { readonly status: 'not-sent' }
  | { readonly status: 'changed'; readonly etag: string; readonly revision: number; readonly body: string };

export type HostReport = {
  readonly sequence: number;
  readonly state: 'applying' | 'applied' | 'failed' | 'heartbeat';
  readonly revision: number;
  readonly step?: string;
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
