import type { AuditEntry } from '../audit/record.ts';
import type { Minted } from './declaration.ts';
import type { Assignment, NodeSnapshot, Relation, SealingKey } from './model.ts';
import type { RelationRef, RemovalPlan } from './removal.ts';
import type { WaitingRelations } from './waiting.ts';

/**
 * What the operator's changes need from the store (lib/server/core/mesh/service.ts). Every write that
 * can change some node's declaration marks that node possibly behind in the same atomic write,
 * and every write that can race is conditional: a lost race is a MeshRaceError (or a named
 * domain error), never a silent overwrite.
 */
export interface MeshChangeStore {
  /** Creates the node with its labels, marked (it was never sent); NodeExistsError when it exists. */
  addNode(node: string, createdAt: string, labels: Labels, entry: AuditEntry): Promise<void>;

  /** The module's mesh-wide record, or undefined when no node was ever assigned it. */
  readModule(module: string): Promise<ModuleRecord | undefined>;

  /**
   * Assigns a module to a node and marks the node. `module` is the record as read: the write
   * holds only if it is unchanged (or still absent), so an upgrade racing an assignment loses
   * nothing. NodeNotFoundError, AlreadyAssignedError, MeshRaceError('model').
   */
  assign(
    node: string,
    assignment: Assignment,
    module: ModuleRecord | undefined,
    entry: AuditEntry,
  ): Promise<void>;

  /**
   * Records that a consumer module on `node` uses a provider (its kind read from the provider's
   * assignment), and marks the consumer's node.
   * Holds only if both assignments still exist and the relation does not:
   * ModuleNotAssignedError, NotAProviderError, DuplicateRelationError.
   */
  consume(node: string, relation: Omit<Relation, 'kind'>, entry: AuditEntry): Promise<void>;

  /**
   * Asks a new secret for a minted provision: both its sides are marked as asked and both nodes
   * marked behind, in one transaction, so the consumer's next compose mints it again (the
   * control plane never holds a secret to replace it with): RelationNotFoundError,
   * ProvisionNotMintedError.
   */
  rotateProvision(relation: RelationRef, rotatedAt: string, entry: AuditEntry): Promise<void>;
}

/** A node's labels (docs/mesh-file.md): not in its declaration, so setting them marks nothing. */
export type Labels = Readonly<Record<string, string>>;

/** Removals (lib/server/core/mesh/removal.ts decides what; this carries it out). */
export interface MeshRemovals {
  /**
   * Reads the node whole, asks `plan` what to take away, and takes it away in one transaction,
   * marking every node the plan names; a removal larger than a transaction goes in steps, each
   * a removal of its own read again (`firstStep`). NodeNotFoundError, whatever `plan` throws,
   * MeshRaceError when something a step was made from changed meanwhile (a new consumer of a
   * provider being removed, say), RemovalTooLargeError when not even one relation fits.
   */
  remove(
    node: string,
    plan: (snapshot: NodeSnapshot) => RemovalPlan,
    entry: AuditEntry,
  ): Promise<RemovalPlan>;
}

/** What compose-and-send needs from the store (lib/server/core/push/pusher.ts). */
export interface PushStore {
  /** The node's partition, read whole; undefined when the node does not exist. */
  readNode(node: string): Promise<NodeSnapshot | undefined>;

  /** The enrolled sealing keys of these nodes, strongly read; a node with no completed enrolment is absent. */
  readSealingKeys(nodes: readonly string[]): Promise<ReadonlyMap<string, SealingKey>>;

  /**
   * Records a send: the delivery with the next revision (`revisionIsNext`), the provisions minted
   * for it (each `provisionUnminted`, with its grant on the provider's side and the provider's
   * node marked), and clears the node's own mark if it is still the one read. MeshRaceError
   * when any of those conditions lost.
   */
  send(write: SendWrite): Promise<void>;

  /** Clears a node's mark if it is still `mark` (a newer mark stays). */
  clearMark(node: string, mark: number): Promise<void>;

  /**
   * Every node currently marked possibly behind, as written: a mark written a moment ago is in
   * the answer (a read that could miss it would let a push call a behind mesh consistent).
   */
  listMarked(): Promise<string[]>;

  /** Every node of the mesh, for the full audit; may lag behind a node added a moment ago. */
  listNodes(): Promise<string[]>;
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
  readonly mints: readonly Minted[];
  /** The node's own mark as read; cleared with the send only if unchanged. */
  readonly mark: number | undefined;
  /** Keep the mark: a relation of the node waits with a held-back node, and a later push sends it whole. */
  readonly keepMark?: boolean;
  /** The parts the previous declaration was kept in (its Sent), which the store removes once this one is sent. */
  readonly previousParts?: number;
  /** The declaration's waiting relations, counted for the views; absent when none waits. */
  readonly waiting?: WaitingRelations;
  /**
   * The rollout claim on the node as the send read it (null: none), which the send holds only if
   * it is unchanged, so a rollout that claims the node meanwhile is never passed by (docs/decisions/held-back.md);
   * absent, the send is not fenced by a claim.
   */
  readonly claim?: string | null;
};
