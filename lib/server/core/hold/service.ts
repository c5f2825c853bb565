import type { Actor } from '../audit/record.ts';
import { BadSelectorError } from '../mesh/labels.ts';
import { FreezeNotFoundError, FreezeUsageError, TooManyFreezesError } from './errors.ts';
import { type Freeze, type FreezeTarget, freezeOn, inForce, maxFreezes, parseUntil } from './freeze.ts';
import type { FreezeStore } from './ports.ts';

/** A freeze's reason: what a person reads when a push names a node it holds. */
const reasonBytes = 500;

/**
 * Freezes (docs/decisions/held-back.md): `mesh freeze` and `mesh unfreeze`. A freeze holds from
 * the moment it is written: the next send that reads the freezes leaves its nodes alone.
 */
export class Freezes {
  readonly #store: FreezeStore;
  readonly #now: () => Date;

  constructor(deps: { readonly store: FreezeStore; readonly now: () => Date }) {
    this.#store = deps.store;
    this.#now = deps.now;
  }

  /** Freezes the target's nodes with a reason, until a time or until lifted; the same target again replaces it. */
  async freeze(
    target: FreezeTarget,
    asked: { readonly reason: string; readonly until?: string | undefined },
    by: Actor,
  ): Promise<Freeze> {
    const now = this.#now();
    const on = onOf(target);
    const reason = asked.reason.trim();
    if (reason.length === 0) throw new FreezeUsageError('--reason: say why the nodes are frozen');
    if (Buffer.byteLength(reason) > reasonBytes || /\p{Cc}/u.test(reason))
      throw new FreezeUsageError(`--reason: one line of at most ${reasonBytes} bytes`);
    const freeze: Freeze = {
      on,
      reason,
      ...(asked.until !== undefined ? { until: parseUntil(asked.until, now) } : {}),
      by: by.principal,
      at: now.toISOString(),
    };
    const others = (await this.list()).filter((f) => f.on !== on);
    if (others.length >= maxFreezes)
      throw new TooManyFreezesError(
        `${others.length} freezes are in force, the most there may be: lift some (mesh unfreeze) or freeze by a broader selector`,
      );
    await this.#store.put(freeze, by);
    return freeze;
  }

  /** Lifts the freeze made on the same target; FreezeNotFoundError (naming those in force) when there is none. */
  async unfreeze(target: FreezeTarget, by: Actor): Promise<Freeze> {
    const on = onOf(target);
    const freezes = await this.list();
    const lifted = freezes.find((f) => f.on === on);
    if (!lifted || !(await this.#store.remove(on, by)))
      throw new FreezeNotFoundError(
        on,
        freezes.map((f) => f.on),
      );
    return lifted;
  }

  /** The freezes in force now, `all` first, then by selector. */
  async list(): Promise<Freeze[]> {
    const now = this.#now();
    return (await this.#store.list())
      .filter((freeze) => inForce(freeze, now))
      .sort((a, b) => (a.on === 'all' ? -1 : b.on === 'all' ? 1 : a.on < b.on ? -1 : a.on > b.on ? 1 : 0));
  }
}

function onOf(target: FreezeTarget): string {
  try {
    return freezeOn(target);
  } catch (error) {
    if (error instanceof BadSelectorError)
      throw new FreezeUsageError(`--on: ${error.message}`, { cause: error });
    throw error;
  }
}
