import type { Actor } from '../../lib/server/core/audit/record.ts';
import { type Freeze, inForce } from '../../lib/server/core/hold/freeze.ts';
import { type Claim, type HoldView, nothingHeld } from '../../lib/server/core/hold/held-back.ts';
import type { FreezeStore, HoldReader } from '../../lib/server/core/hold/ports.ts';
import type { MemoryRolloutStore } from './memory-rollout-store.ts';

/** Freezes in memory, as the DynamoDB store keeps them (one per `on`); each change counted. */
export class MemoryFreezeStore implements FreezeStore {
  readonly freezes = new Map<string, Freeze>();
  readonly changes: Array<{ readonly action: string; readonly on: string; readonly by: string }> = [];

  async put(freeze: Freeze, by: Actor): Promise<void> {
    this.freezes.set(freeze.on, freeze);
    this.changes.push({ action: 'mesh.freeze', on: freeze.on, by: by.principal });
  }

  async remove(on: string, by: Actor): Promise<boolean> {
    const had = this.freezes.delete(on);
    if (had) this.changes.push({ action: 'mesh.unfreeze', on, by: by.principal });
    return had;
  }

  async list(): Promise<Freeze[]> {
    return [...this.freezes.values()];
  }
}

/**
 * What holds nodes back, read from the in-memory rollout store (its claims and holding rollouts,
 * as rollout-holding.ts keeps them) and freeze store, with the nodes' labels kept here: the
 * DynamoDB hold reader's answer for the same state.
 */
export class MemoryHoldReader implements HoldReader {
  readonly labels = new Map<string, Readonly<Record<string, string>>>();
  readonly #rollouts: MemoryRolloutStore;
  readonly #freezes: MemoryFreezeStore;
  readonly #now: () => Date;

  constructor(rollouts: MemoryRolloutStore, freezes: MemoryFreezeStore, now: () => Date = () => new Date()) {
    this.#rollouts = rollouts;
    this.#freezes = freezes;
    this.#now = now;
  }

  async view(nodes: readonly string[], known?: Pick<HoldView, 'rollouts' | 'freezes'>): Promise<HoldView> {
    const now = this.#now();
    const rollouts = known?.rollouts ?? this.#rollouts.holding();
    const freezes = known?.freezes ?? [...this.#freezes.freezes.values()].filter((f) => inForce(f, now));
    const claims = new Map<string, Claim>();
    const labels = new Map<string, Readonly<Record<string, string>>>();
    for (const node of nodes) {
      const claim = this.#rollouts.claims.get(node);
      if (claim) claims.set(node, { rollout: claim.rollout, wave: claim.cut });
      if (freezes.length > 0) labels.set(node, this.labels.get(node) ?? {});
    }
    return { rollouts, freezes, claims, labels };
  }
}

/** A hold reader for a mesh where nothing is held back. */
export const nothingHolds: HoldReader = { view: async () => nothingHeld };
