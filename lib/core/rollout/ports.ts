import type { Facts } from './advance.ts';
import type { RolloutRecord, RolloutState } from './record.ts';

/** Where rollouts are kept (lib/adapters/dynamodb/rollout-store.ts): each record whole, written only when unchanged. */
export interface RolloutStore {
  /** Writes a new record; false when one is kept under its id already (a start asked twice). */
  create(record: RolloutRecord): Promise<boolean>;
  /** Writes the record at `record.version + 1` if the kept one is still at `record.version`; RolloutRaceError if not. */
  write(record: RolloutRecord): Promise<RolloutRecord>;
  read(id: string): Promise<RolloutRecord | undefined>;
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
};

/** What the control plane knows of nodes a rollout waits on (lib/adapters/dynamodb/rollout-facts.ts). */
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

  listen(listener: (id: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
