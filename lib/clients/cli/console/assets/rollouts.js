// @ts-check
import { badge, el, when } from './dom.js';
import { segment } from './fleet-view.js';

/**
 * The rollouts panel: the latest rollouts, newest first, each with how far it came and, for one
 * halted, why; `mesh rollout show ID` has every node.
 *
 * @typedef {import('../../../../server/core/rollout/ports.ts').RolloutSummary} RolloutSummary
 * @typedef {import('../../../../server/core/rollout/pages.ts').RolloutAnswer} RolloutAnswer
 * @typedef {{ nowMs: number, onNode: (node: string) => void }} PanelContext
 */

/** @param {RolloutSummary['origin']} origin */
function rolloutWhat(origin) {
  if (origin.kind === 'upgrade') return `upgrade ${origin.module} ${origin.version}`;
  if (origin.kind === 'push') return `push ${origin.node}`;
  if (origin.kind === 'on') return `push --on ${origin.selector}`;
  if (origin.kind === 'agent') return `agent upgrade ${origin.version}`;
  if (origin.kind === 'undo') return `undo of ${origin.rollout} (${origin.module} back to ${origin.version})`;
  if (origin.kind === 'agent-undo') return `undo of ${origin.rollout} (agent ${origin.version} taken back)`;
  return 'push --behind';
}

/**
 * @param {readonly RolloutSummary[]} rollouts @param {PanelContext} context
 * @param {{ open: ReadonlySet<string>, answers: ReadonlyMap<string, RolloutAnswer>, onToggle: (id: string, open: boolean) => void }} [waves]
 *   the rollouts opened, and the answers of GET /rollouts/{id} read for them: their waves are shown
 */
export function rolloutsPanel(rollouts, context, waves) {
  if (rollouts.length === 0)
    return [el('p', { class: 'muted' }, 'No rollout yet: mesh push or mesh upgrade with --waves.')];
  return rollouts.map((rollout) => {
    const counts = Object.entries(rollout.counts).map(([state, count]) => `${count} ${state}`);
    const answer = waves?.answers.get(rollout.id);
    return el(
      'details',
      {
        class: 'entry rollout',
        'data-rollout': rollout.id,
        open: waves?.open.has(rollout.id) ?? false,
        ontoggle: (/** @type {Event} */ event) =>
          waves?.onToggle(rollout.id, /** @type {HTMLDetailsElement} */ (event.target).open),
      },
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
      answer
        ? wavesElement(answer, context)
        : waves?.open.has(rollout.id)
          ? el('p', { class: 'muted' }, 'reading its waves…')
          : null,
    );
  });
}

/** A node outcome's colour in a wave's bar, as the fleet view's states. */
const stateClass = /** @type {Record<string, string>} */ ({
  applied: 'applied',
  failed: 'failed',
  'timed-out': 'failed',
  held: 'held',
  skipped: 'unenrolled',
  offline: 'offline',
  waiting: 'behind',
  pending: 'pending',
});
const outcomeOrder = ['applied', 'failed', 'timed-out', 'held', 'skipped', 'offline', 'waiting', 'pending'];

/**
 * A rollout's waves with their progress: each wave's nodes sent, reported (applied or failed),
 * failed, held, as a bar and in words; the gate every wave passes before the next; and its
 * halted, paused or undone state with why.
 * @param {RolloutAnswer} answer @param {PanelContext} context
 */
export function wavesElement(answer, context) {
  const o = answer.options;
  const share = (/** @type {{ count: number } | { percent: number } | number | string} */ s) =>
    typeof s === 'object' ? ('percent' in s ? `${s.percent}%` : String(s.count)) : String(s);
  const timeout =
    o.waveTimeoutSeconds % 60 === 0 ? `${o.waveTimeoutSeconds / 60} min` : `${o.waveTimeoutSeconds} s`;
  const gate = [
    `halts past ${share(o.maxFailures)} failed`,
    `a wave waits up to ${timeout} for its nodes`,
    o.pause ? 'pauses after each wave' : '',
    o.autoUndo ? 'undoes itself when it halts' : '',
  ]
    .filter(Boolean)
    .join('; ');
  return el(
    'div',
    { class: 'waves', 'data-waves': answer.id },
    el('p', { class: 'gate' }, `gate: ${gate}`),
    answer.state === 'halted' ||
      answer.state === 'paused' ||
      answer.state === 'undone' ||
      answer.state === 'aborted'
      ? el(
          'p',
          { class: `rollout-state s-${answer.state === 'paused' ? 'held' : 'failed'}` },
          `${answer.state}${answer.reason ? `: ${answer.reason}` : ''}${answer.undoneBy ? `; undone by ${answer.undoneBy}` : ''}`,
        )
      : null,
    el(
      'ol',
      {},
      ...answer.waves.map((wave, index) => {
        const counts = /** @type {Record<string, number>} */ (wave.counts);
        const sent = index <= answer.current;
        const reported = (counts.applied ?? 0) + (counts.failed ?? 0);
        const failed = (counts.failed ?? 0) + (counts['timed-out'] ?? 0);
        const held = counts.held ?? 0;
        const words = sent
          ? `${wave.size} sent · ${reported} reported · ${failed} failed · ${held} held`
          : `${wave.size} not sent yet`;
        return el(
          'li',
          {
            class: `wave${sent ? ' sent' : ''}${index === answer.current ? ' current' : ''}`,
            'data-wave': String(index + 1),
          },
          el('span', { class: 'wave-title' }, `wave ${index + 1} of ${answer.waves.length}`),
          el(
            'span',
            { class: 'bar', 'aria-hidden': 'true' },
            ...outcomeOrder
              .filter((state) => (counts[state] ?? 0) > 0)
              .map((state) =>
                segment(stateClass[state] ?? 'plain', counts[state] ?? 0, `${counts[state]} ${state}`),
              ),
          ),
          el('span', { class: 'wave-counts' }, words),
          wave.sentAt
            ? el(
                'span',
                { class: 'muted' },
                ' sent ',
                when(wave.sentAt, context.nowMs),
                wave.endedAt ? ', ended ' : '',
                wave.endedAt ? when(wave.endedAt, context.nowMs) : '',
              )
            : null,
        );
      }),
    ),
  );
}
