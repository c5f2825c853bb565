import type { Labels } from '../mesh/labels.ts';
import { type Freeze, type FreezeMatcher, freezeHolder, freezeMatcher } from './freeze.ts';

/**
 * Held back (docs/decisions/held-back.md): a node claimed by a rollout that holds nodes
 * (claiming, running, paused, halted) in a wave it has not sent, or matched by a freeze in force.
 * Nothing sends it what its rollout or freeze has not released: not a named push, not a flush,
 * not an upgrade without waves. Only its rollout's own wave sends it, and never while frozen.
 */

/** A node a send left alone, and who holds it: `rollout:<id>` or `freeze:<on>`. */
export type HeldBack = {
  readonly node: string;
  readonly by: string;
  /**
   * Set when the node is not held itself but a relation of its own needs a held-back node sent
   * first (a provider that has not been sent the grant, a consumer still holding a provision the
   * node would drop): it waits with that node.
   */
  readonly waitsFor?: string;
};

/**
 * The states in which a rollout holds its nodes: claiming them, able to send (running, paused)
 * or to be resumed (halted).
 */
export type HoldingState = 'claiming' | 'running' | 'paused' | 'halted';

/** A rollout that holds nodes, as its holding item says: its state, and the last wave it sent (-1 before the first). */
export type HoldingRollout = {
  readonly state: HoldingState;
  readonly current: number;
  /** How many of its own nodes are in waves it has not sent: what it holds back. */
  readonly notSent?: number;
  /** The first few of them, by name. */
  readonly some?: readonly string[];
};

/** Who holds nodes back now, as every push names them (`holders`): each rollout and freeze in force. */
export type Holder =
  | {
      readonly by: string;
      readonly rollout: string;
      readonly state: HoldingState;
      readonly notSent: number;
      readonly some: readonly string[];
    }
  | {
      readonly by: string;
      readonly freeze: string;
      readonly reason: string;
      readonly until?: string;
    };

/** Every holder of a view: rollouts by id, then freezes. */
export function holdersOf(view: Pick<HoldView, 'rollouts' | 'freezes'>): Holder[] {
  return [
    ...[...view.rollouts]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([id, r]) => ({
        by: rolloutHolder(id),
        rollout: id,
        state: r.state,
        notSent: r.notSent ?? 0,
        some: r.some ?? [],
      })),
    ...view.freezes.map((f) => ({
      by: freezeHolder(f.on),
      freeze: f.on,
      reason: f.reason,
      ...(f.until ? { until: f.until } : {}),
    })),
  ];
}

/** The claim on one node: the rollout and the wave of it that sends the node. */
export type Claim = { readonly rollout: string; readonly wave: number };

/** What holds could apply to some nodes, read at once (HoldReader.view). */
export type HoldView = {
  /** Every rollout holding nodes now, by id. */
  readonly rollouts: ReadonlyMap<string, HoldingRollout>;
  /** Every freeze in force now. */
  readonly freezes: readonly Freeze[];
  /** The claims on the nodes asked about, as read (absent: unclaimed). */
  readonly claims: ReadonlyMap<string, Claim>;
  /** The labels of the nodes asked about, read only when some freeze is in force. */
  readonly labels: ReadonlyMap<string, Labels>;
};

/** A view with nothing in it: no rollout holds, no freeze: nothing is held back. */
export const nothingHeld: HoldView = {
  rollouts: new Map(),
  freezes: [],
  claims: new Map(),
  labels: new Map(),
};

/** Whether anything could be held at all: no holding rollout and no freeze in force is the common, cheap case. */
export const anyHold = (view: Pick<HoldView, 'rollouts' | 'freezes'>) =>
  view.rollouts.size > 0 || view.freezes.length > 0;

export const rolloutHolder = (id: string) => `rollout:${id}`;

/**
 * Who holds a node, or undefined when nothing does, for a send made by `sending` (a rollout's
 * wave sends its own nodes; anything else is undefined). A freeze holds even a rollout's own
 * wave; a claim holds the node until its rollout's wave that sends it has been sent.
 */
export function holderOf(
  node: string,
  view: HoldView,
  sending?: string,
  matcher: FreezeMatcher = freezeMatcher(view.freezes),
): string | undefined {
  if (view.freezes.length > 0) {
    const freeze = matcher(view.labels.get(node) ?? {});
    if (freeze) return freezeHolder(freeze.on);
  }
  const claim = view.claims.get(node);
  if (!claim || claim.rollout === sending) return undefined;
  const rollout = view.rollouts.get(claim.rollout);
  if (!rollout || claim.wave <= rollout.current) return undefined;
  return rolloutHolder(claim.rollout);
}

/** The holders of many nodes: each held one with who holds it. */
export function heldOf(nodes: readonly string[], view: HoldView, sending?: string): HeldBack[] {
  if (!anyHold(view)) return [];
  const matcher = freezeMatcher(view.freezes);
  const held: HeldBack[] = [];
  for (const node of nodes) {
    const by = holderOf(node, view, sending, matcher);
    if (by) held.push({ node, by });
  }
  return held;
}

/**
 * Entries of a view (status rows, listed nodes, the graph's nodes) with who holds each back
 * (`heldBack`), read once for the page: one BatchGetItem and two small Queries.
 */
export async function withHeldBack<Entry extends { readonly node: string }>(
  entries: readonly Entry[],
  holds: { view(nodes: readonly string[]): Promise<HoldView> },
): Promise<Array<Entry & { readonly heldBack?: string }>> {
  if (entries.length === 0) return [];
  const view = await holds.view(entries.map((entry) => entry.node));
  const held = new Map(
    heldOf(
      entries.map((entry) => entry.node),
      view,
    ).map((h) => [h.node, h.by]),
  );
  return entries.map((entry) => {
    const by = held.get(entry.node);
    return by === undefined ? entry : { ...entry, heldBack: by };
  });
}
