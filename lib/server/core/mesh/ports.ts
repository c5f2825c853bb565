import type { Actor } from '../audit/record.ts';

/**
 * The mesh area's ports: the store of the operator's changes and removals (store.ts), and the
 * module versions an upgrade sets. Compose-and-send's store (PushStore) is beside them in store.ts.
 */
export type { MeshChangeStore, MeshRemovals, PushStore } from './store.ts';

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
    options?: {
      readonly carriers?: boolean;
      /**
       * When (epoch ms) to stop moving carriers: those left are `more`. A throttle after some
       * were moved stops early the same way; one before any were moved is StoreUnavailableError.
       */
      readonly until?: number;
      /** The rest of an upgrade: moves carriers only while the module is at the version, and writes no version. */
      readonly continues?: boolean;
      /** Where the rest goes on: the carriers after this node (in the store's order) are walked. */
      readonly after?: string;
    },
  ): Promise<{
    readonly carriers: readonly string[];
    /** The module's version before (null: none), read as the upgrade began: what an undo sets back. */
    readonly previous: string | null;
    /** Carriers not moved yet: the time ran out, or the store throttled. */
    readonly more: boolean;
    /** With `more`: the last carrier this pass walked, where the rest goes on (`after`). */
    readonly next?: string;
    /** A continuation found the module at another version: a newer upgrade moves its carriers. */
    readonly overtaken?: boolean;
  }>;
  /**
   * Moves these nodes' assignment of the module to the version, each with its stale mark, one
   * transaction a node; a node that no longer carries it, or is at the version already, is left.
   */
  moveCarriers(module: string, version: string, nodes: readonly string[]): Promise<void>;
  /** Whether some node was ever assigned the module: what an upgrade of it can set. */
  isKnown(module: string): Promise<boolean>;
}

/**
 * The agent version each node's host is to run (`mesh agent upgrade`): set on a rollout's wave
 * just before it is sent, with each node's stale mark, one transaction a node; a node removed
 * since, or at the version already, is left as it is.
 */
export interface AgentVersions {
  /**
   * Sets VERSION on the nodes, each remembering, under ROLLOUT, the version its host ran before
   * (agent-before.ts); answers the distinct versions before, at most `limit`, of the nodes this
   * rollout set (those set by an earlier try of the same wave included).
   */
  setAgentVersion(
    version: string,
    nodes: readonly string[],
    rollout: string,
    limit: number,
  ): Promise<readonly string[]>;
  /**
   * The undo of ROLLOUT, which set VERSION: each node still asked for VERSION set back to the
   * version it remembers from before ROLLOUT (restoreOf), with its stale mark; others are left.
   */
  restoreAgentVersion(rollout: string, version: string, nodes: readonly string[]): Promise<void>;
  /**
   * What the nodes' hosts would be asked to run, by version then by the architecture each host
   * last reported (null: its host said none), writing nothing: VERSION on every node (`set`), or
   * what the undo of ROLLOUT would set each back to (`restore`, as restoreAgentVersion would;
   * a node left as it is, or with the version taken away, is asked nothing).
   */
  askedOf(nodes: readonly string[], asking: AgentAsking): Promise<HostsAsked>;
}

/** What an agent upgrade asks (`set`), or its undo (`restore`): AgentVersions.askedOf. */
export type AgentAsking =
  | { readonly kind: 'set'; readonly version: string }
  | { readonly kind: 'restore'; readonly rollout: string; readonly version: string };

/** Nodes by the agent version asked of them, then by their hosts' architecture (null: not said). */
export type HostsAsked = ReadonlyMap<string, ReadonlyMap<string | null, readonly string[]>>;
