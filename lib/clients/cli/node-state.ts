import type { NodeStatus } from '../../server/core/views/ports.ts';
import { holderText } from './output-lines.ts';

/**
 * A node's state as a view's row says it: behind, up to date, or never enrolled (a node with no
 * host has applied nothing, so it is never "up to date"); and who holds it back, when someone does
 * (docs/decisions/held-back.md).
 */
export function stateOf(
  node: Pick<NodeStatus, 'behind' | 'enrolled' | 'appliedRevision' | 'heldBack'>,
): string[] {
  const state = node.behind
    ? 'BEHIND'
    : node.enrolled
      ? 'up to date'
      : node.appliedRevision === null
        ? 'never enrolled'
        : 'not enrolled';
  return [state, ...(node.heldBack ? [`held back by ${holderText(node.heldBack)}`] : [])];
}
