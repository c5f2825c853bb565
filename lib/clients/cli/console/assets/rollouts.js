// @ts-check
import { badge, el, when } from './dom.js';

/**
 * The rollouts panel: the latest rollouts, newest first, each with how far it came and, for one
 * halted, why; `mesh rollout show ID` has every node.
 *
 * @typedef {import('../../../../server/core/rollout/ports.ts').RolloutSummary} RolloutSummary
 * @typedef {{ nowMs: number, onNode: (node: string) => void }} PanelContext
 */

/** @param {RolloutSummary['origin']} origin */
function rolloutWhat(origin) {
  if (origin.kind === 'upgrade') return `upgrade ${origin.module} ${origin.version}`;
  if (origin.kind === 'push') return `push ${origin.node}`;
  if (origin.kind === 'on') return `push --on ${origin.selector}`;
  return 'push --behind';
}

/** @param {readonly RolloutSummary[]} rollouts @param {PanelContext} context */
export function rolloutsPanel(rollouts, context) {
  if (rollouts.length === 0)
    return [el('p', { class: 'muted' }, 'No rollout yet: mesh push or mesh upgrade with --waves.')];
  return rollouts.map((rollout) => {
    const counts = Object.entries(rollout.counts).map(([state, count]) => `${count} ${state}`);
    return el(
      'details',
      { class: 'entry rollout', 'data-rollout': rollout.id },
      el(
        'summary',
        {},
        when(rollout.createdAt, context.nowMs),
        ` ${rolloutWhat(rollout.origin)} `,
        badge(rollout.state),
        ` wave ${rollout.wave}/${rollout.waves}`,
      ),
      el(
        'ul',
        {},
        el('li', {}, `id ${rollout.id}: mesh rollout show ${rollout.id}`),
        rollout.claims
          ? el('li', {}, `claiming its nodes: ${rollout.claims.claimed} of ${rollout.claims.total} claimed`)
          : null,
        counts.length > 0 ? el('li', {}, counts.join(', ')) : null,
        rollout.reason ? el('li', {}, `why: ${rollout.reason}`) : null,
      ),
    );
  });
}
