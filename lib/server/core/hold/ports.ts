import type { Actor } from '../audit/record.ts';
import type { Freeze } from './freeze.ts';
import type { HoldView } from './held-back.ts';

/** Where a send learns what holds nodes back (lib/server/adapters/hold/hold-reader.ts). */
export interface HoldReader {
  /**
   * The rollouts holding nodes and the freezes in force, with the claims on these nodes (always:
   * a send is fenced by the claim it read) and, while a freeze is in force, their labels. Pass
   * `known` (a view read a moment before) to read only the nodes' own items.
   */
  view(nodes: readonly string[], known?: Pick<HoldView, 'rollouts' | 'freezes'>): Promise<HoldView>;
}

/** Where freezes are kept (lib/server/adapters/hold/freeze-store.ts), each change with its audit record. */
export interface FreezeStore {
  /** Puts the freeze under its `on` (replacing one there); TooManyFreezesError past maxFreezes in force. */
  put(freeze: Freeze, by: Actor): Promise<void>;
  /** Deletes the freeze under `on`; false when there was none. */
  remove(on: string, by: Actor): Promise<boolean>;
  /** Every freeze kept, in force or past its time. */
  list(): Promise<Freeze[]>;
}
