import type { Actor } from '../audit/record.ts';
import type { Facts } from './advance.ts';
import type { ClaimProgress } from './claims.ts';
import type { RolloutOverlapError } from './errors.ts';
import type { NodeOutcome, RolloutRecord, RolloutState } from './record.ts';

/** How much one claiming or releasing step may do: so many nodes, and no new batch after so long. */
export type StepBudget = { readonly nodes: number; readonly ms: number };

/** What one claiming step did: how far the claims came (counted from the first own node), or whom it met. */
export type ClaimStep = { readonly claimed: number } | { readonly overlap: RolloutOverlapError };

/** An operator's change of a rollout, recorded on the audit trail with its write. */
export type RolloutChange = {
  readonly by: Actor;
  readonly action: 'rollout.resume' | 'rollout.abort' | 'rollout.undo';
};

/**
 * Where rollouts are kept (lib/server/adapters/rollout/rollout-store.ts): a small header, each wave's
 * nodes apart, written only when unchanged; each of a rollout's own nodes claimed while it holds it.
 */
export interface RolloutStore {
  /**
   * Writes a new record with every wave's nodes (its parts and header: no claim, whatever its
   * size; the driver claims them, `claim`); false when one is kept under its id already (a start
   * asked twice).
   */
  create(record: RolloutRecord, by: Actor): Promise<boolean>;
  /**
   * Writes the record at `record.version + 1` if the kept one is still at `record.version`
   * (RolloutRaceError if not): its header, and the nodes of the waves it holds with them. A record
   * that is done or aborted lets its nodes go, unless it lets them go a step at a time (`releasing`).
   * A change names who asked for it: its audit record is written with the header.
   */
  write(record: RolloutRecord, change?: RolloutChange): Promise<RolloutRecord>;
  /**
   * Claims the rollout's own nodes from the `from`-th (wave after wave, as cut) on, at most
   * `budget.nodes` of them, starting no batch after `budget.ms`; how far the claims came, or the
   * rollout that holds some of them (running, paused, halted or claiming). Claims it made stay:
   * a refusal lets them go (`release`).
   */
  claim(record: RolloutRecord, from: number, budget: StepBudget): Promise<ClaimStep>;
  /**
   * Lets go of the rollout's claims on its own nodes from the `from`-th to before the `upto`-th
   * (a claim another rollout holds now is left), within the budget; how far it came.
   */
  release(record: RolloutRecord, from: number, upto: number, budget: StepBudget): Promise<number>;
  /**
   * Deletes what starts that died before their header left (their parts), a few at a time, so
   * no part is kept that no header names; how many it took.
   */
  sweep(): Promise<number>;
  /** The record without any wave's nodes (each wave's tally only). */
  read(id: string): Promise<RolloutRecord | undefined>;
  /** The same record with these waves' nodes read. */
  withNodes(record: RolloutRecord, waves: readonly number[]): Promise<RolloutRecord>;
  /**
   * The nodes from the `at`-th of the rollout's (counted wave after wave) on, a wave's part at a
   * time, whole parts until they pass `bytes` of JSON or the waves end: what one page is cut from.
   */
  nodesFrom(
    record: RolloutRecord,
    at: number,
    bytes: number,
  ): Promise<ReadonlyArray<{ readonly wave: number; readonly nodes: readonly NodeOutcome[] }>>;
  /**
   * Moves the claims of these own nodes to wave `wave` (record index): a send moved them into it
   * from a later one, and they are released with it (docs/decisions/held-back.md).
   */
  moveClaims(record: RolloutRecord, wave: number, nodes: readonly string[]): Promise<void>;
  /** Which wave of the rollout holds each of these nodes, of its own (-1: a wave since emptied, so an earlier one). */
  held(record: RolloutRecord, nodes: readonly string[]): Promise<ReadonlyMap<string, number>>;
  /** Newest first, a page at a time. */
  list(page: { readonly limit: number; readonly cursor?: string | undefined }): Promise<RolloutPage>;
  /** The ids of the rollouts running now, without reading every record: what a driver resumes. */
  running(): Promise<string[]>;
}

export type RolloutPage = {
  readonly rollouts: readonly RolloutSummary[];
  /** Where the next page starts; absent on the last. */
  readonly cursor?: string;
};

/** One rollout in a list: what it is and how far it came, without its nodes. */
export type RolloutSummary = {
  readonly id: string;
  readonly origin: RolloutRecord['origin'];
  readonly state: RolloutState;
  readonly reason?: string;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly waves: number;
  /** The wave in flight or last sent, counted from 1; 0 before the first. */
  readonly wave: number;
  readonly counts: Readonly<Record<string, number>>;
  /** While claiming: how many of its own nodes are claimed, of how many. */
  readonly claims?: ClaimProgress;
};

/** What the control plane knows of nodes a rollout waits on (lib/server/adapters/rollout/rollout-facts.ts). */
export interface RolloutFacts {
  /** Each node's last report and presence. */
  of(nodes: readonly string[]): Promise<Facts>;
  /** Each node's sent revision now; a node that does not exist is absent. */
  revisions(nodes: readonly string[]): Promise<ReadonlyMap<string, number>>;
}

/** Tells whatever drives rollouts that one started or was resumed, so it does not wait for its next tick. */
export interface RolloutDriver {
  /** The record as started or resumed: its id and version name the flow's execution on AWS. */
  started(record: Pick<RolloutRecord, 'id' | 'version'>): Promise<void>;
  /**
   * Whether something steps the rollout at this moment (on AWS, an execution of its flow is running): a
   * rollout its record says is driven while nothing steps it is dead, and resume starts it again.
   */
  driving(id: string): Promise<boolean>;
}

/**
 * The driver of one process (the local runtime's): `started` wakes whoever listens, so a new or
 * resumed rollout's first step does not wait for the next tick. Nobody listening loses nothing:
 * the driver finds every running rollout by its record on each tick.
 */
export class RolloutKicks implements RolloutDriver {
  readonly #listeners = new Set<(id: string) => void>();

  async started(record: Pick<RolloutRecord, 'id' | 'version'>): Promise<void> {
    for (const listener of this.#listeners) listener(record.id);
  }

  /** The process's driver steps every driven rollout by its record on each tick, while it runs. */
  async driving(_id: string): Promise<boolean> {
    return true;
  }

  listen(listener: (id: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
