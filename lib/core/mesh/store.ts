import type { Assignment, NodeSnapshot, Provision, Relation } from './model.ts';

/**
 * What the mesh core needs from its store. Every write that can change some node's declaration
 * marks that node possibly behind in the same atomic write, and every write that can race is
 * conditional: a lost race is a MeshRaceError (or a named domain error), never a silent overwrite.
 */
export interface MeshStore {
  /** Creates the node, marked (it was never sent); NodeExistsError when it exists. */
  addNode(node: string, createdAt: string): Promise<void>;

  /** The module's mesh-wide record, or undefined when no node was ever assigned it. */
  readModule(module: string): Promise<ModuleRecord | undefined>;

  /**
   * Assigns a module to a node and marks the node. `module` is the record as read: the write
   * holds only if it is unchanged (or still absent), so an upgrade racing an assignment loses
   * nothing. NodeNotFoundError, AlreadyAssignedError, MeshRaceError('model').
   */
  assign(node: string, assignment: Assignment, module: ModuleRecord | undefined): Promise<void>;

  /**
   * Records that a consumer module on `node` uses a provider (its kind read from the provider's
   * assignment), and marks the consumer's node.
   * Holds only if both assignments still exist and the relation does not:
   * ModuleNotAssignedError, NotAProviderError, DuplicateRelationError.
   */
  consume(node: string, relation: Omit<Relation, 'kind'>): Promise<void>;

  /**
   * Sets a known module's version (`moduleKnown`: some node was assigned it, else
   * ModuleNotFoundError and nothing written), then the version on every carrier's assignment
   * with its stale mark (one transaction per carrier). Returns the carriers.
   */
  setModuleVersion(module: string, version: string): Promise<{ readonly carriers: readonly string[] }>;

  /** The node's partition, read whole; undefined when the node does not exist. */
  readNode(node: string): Promise<NodeSnapshot | undefined>;

  /**
   * Records a send: the delivery with the next revision (`revisionIsNext`), the provisions minted
   * for it (each `provisionUnminted`, with its grant on the provider's side and the provider's
   * node marked), and clears the node's own mark if it is still the one read. MeshRaceError
   * when any of those conditions lost.
   */
  send(write: SendWrite): Promise<void>;

  /** Clears a node's mark if it is still `mark` (a newer mark stays). */
  clearMark(node: string, mark: number): Promise<void>;

  /** Every node currently marked possibly behind. */
  listMarked(): Promise<string[]>;

  /** Every node of the mesh, for the full audit and status. */
  listNodes(): Promise<string[]>;

  /** What status shows of one node (its partition, read whole). */
  readStatus(node: string): Promise<NodeStatus | undefined>;
}

export type ModuleRecord = {
  readonly module: string;
  readonly version: string | null;
  readonly provides: string | null;
};

export type SendWrite = {
  readonly node: string;
  readonly revision: number;
  /** The revision read before composing; undefined when the node was never sent. */
  readonly previousRevision: number | undefined;
  readonly digest: string;
  readonly canonical: string;
  readonly sentAt: string;
  readonly mints: readonly Provision[];
  /** The node's own mark as read; cleared with the send only if unchanged. */
  readonly mark: number | undefined;
};

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
  readonly lastHeard: string | null;
};
