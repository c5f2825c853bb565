import { unfreezeCommand } from '../../server/core/hold/freeze.ts';
import type { HeldBack, Holder } from '../../server/core/hold/held-back.ts';
import type { Output } from './output.ts';
import { cliLines } from './output-lines.ts';

/** How many held-back nodes a line names before it counts the rest. */
const namedPerHolder = 10;

/** What releases the nodes a holder holds back, as a person would type it. */
export function releaseOf(by: string): string {
  const [kind, ...rest] = by.split(':');
  const what = rest.join(':');
  if (kind === 'freeze') return `${unfreezeCommand(what)} releases them`;
  return `its later waves send them: mesh rollout resume ${what}, or take it back with mesh rollout undo ${what}, or stop it with mesh rollout abort ${what} (mesh rollout show ${what})`;
}

/**
 * Names the nodes held back, a line per holder (`push.held-back`) with the command that releases
 * them: the nodes the push met and left alone, and for every rollout or freeze holding nodes now
 * (`holders`) how many it holds and a few by name; then each node whose relation waits with a
 * held-back node, and which.
 */
export function sayHeldBack(
  output: Output,
  outcome: {
    readonly heldBack?: readonly HeldBack[];
    readonly holders?: readonly Holder[];
    readonly heldBackCount?: number;
  },
): void {
  const heldBack = outcome.heldBack ?? [];
  const met = new Map<string, string[]>();
  for (const held of heldBack.filter((h) => h.waitsFor === undefined))
    met.set(held.by, [...(met.get(held.by) ?? []), held.node]);
  const holders = new Map((outcome.holders ?? []).map((holder) => [holder.by, holder]));
  for (const by of new Set([...met.keys(), ...holders.keys()])) {
    const holder = holders.get(by);
    const named = [
      ...new Set([...(met.get(by) ?? []), ...(holder && 'rollout' in holder ? holder.some : [])]),
    ];
    const count = Math.max(named.length, holder && 'rollout' in holder ? holder.notSent : 0);
    output.say(cliLines.pushHeldBack, {
      by,
      nodes: named.slice(0, namedPerHolder),
      count,
      release: `${holder && 'reason' in holder ? `${holder.reason}; ` : ''}${releaseOf(by)}`,
    });
  }
  for (const held of heldBack.filter((h) => h.waitsFor !== undefined).slice(0, namedPerHolder))
    output.line(
      `${held.node}: a relation with ${held.waitsFor} waits, as ${held.waitsFor} is held back; both sides are sent it together once released`,
    );
  const unlisted = (outcome.heldBackCount ?? heldBack.length) - heldBack.length;
  if (unlisted > 0)
    output.line(
      `… and ${unlisted.toLocaleString('en')} more held back (the push's record lists the first ${heldBack.length.toLocaleString('en')})`,
    );
}
