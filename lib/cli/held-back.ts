import { unfreezeCommand } from '../core/hold/freeze.ts';
import type { HeldBack } from '../core/hold/held-back.ts';
import { cliLines } from './lines.ts';
import type { Output } from './output.ts';

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
 * Names every node a push left alone, a line per holder with the command that releases them
 * (`push.held-back`), then each node that waits with a held-back node, and which.
 */
export function sayHeldBack(output: Output, heldBack: readonly HeldBack[], count = heldBack.length): void {
  const byHolder = new Map<string, string[]>();
  for (const held of heldBack) byHolder.set(held.by, [...(byHolder.get(held.by) ?? []), held.node]);
  for (const [by, nodes] of byHolder)
    output.say(cliLines.pushHeldBack, {
      by,
      nodes: nodes.slice(0, namedPerHolder),
      count: nodes.length,
      release: releaseOf(by),
    });
  for (const held of heldBack.filter((h) => h.waitsFor !== undefined).slice(0, namedPerHolder))
    output.line(
      `${held.node} waits for ${held.waitsFor}, which is held back: a relation between them is sent to both at once`,
    );
  const unlisted = count - heldBack.length;
  if (unlisted > 0)
    output.line(
      `… and ${unlisted.toLocaleString('en')} more held back (the push's record lists the first ${heldBack.length.toLocaleString('en')})`,
    );
}
