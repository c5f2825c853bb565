// @ts-check
import { badge, el, when } from './dom.js';

/**
 * The side panels: a node's details, a group's members, the recent pushes and the dead letters.
 * Each is built whole from what its route answered.
 *
 * @typedef {import('../../../../server/core/views/views.ts').NodeDetails} NodeDetails
 * @typedef {import('../../../../server/core/views/views.ts').MeshEdge} MeshEdge
 * @typedef {import('../../../../server/core/views/views.ts').MeshNode} MeshNode
 * @typedef {import('../../../../server/core/push/records.ts').PushRecordView} PushRecordView
 * @typedef {import('../../../../server/core/audit/record.ts').AuditRecord} AuditRecord
 * @typedef {import('../../../../server/core/control/dead-letter-notes.ts').DeadLetterNote} DeadLetterNote
 * @typedef {import('../../../../server/core/control/dead-letter-notes.ts').DeadLetterDepth} DeadLetterDepth
 * @typedef {{ nowMs: number, onNode: (node: string) => void }} PanelContext
 */

/** @param {string} node @param {PanelContext} context */
const nodeLink = (node, context) =>
  el('button', { class: 'link', type: 'button', onclick: () => context.onNode(node) }, node);

/** @param {Array<[string, Node | string]>} rows */
const facts = (rows) =>
  el(
    'table',
    {},
    el('tbody', {}, ...rows.map(([name, value]) => el('tr', {}, el('th', {}, name), el('td', {}, value)))),
  );

/**
 * The nodes each of the declaration's waiting relations waits for, by `module>node/module`; empty
 * when the declaration is not in the answer (kept in parts, or never sent).
 * @param {unknown} declaration
 * @returns {Map<string, readonly string[]>}
 */
function waitingIn(declaration) {
  const waiting = /** @type {{ waiting?: unknown }} */ (declaration)?.waiting;
  if (!Array.isArray(waiting)) return new Map();
  return new Map(
    waiting.map(
      (
        /** @type {{ module: string, provider: { node: string, module: string }, waitingFor: string[] }} */ w,
      ) => [`${w.module}>${w.provider.node}/${w.provider.module}`, w.waitingFor],
    ),
  );
}

/**
 * @param {readonly MeshEdge[]} edges
 * @param {'provider' | 'consumer'} far
 * @param {string} id
 * @param {PanelContext} context
 * @param {ReadonlyMap<string, readonly string[]>} [waiting]
 */
function relationList(edges, far, id, context, waiting = new Map()) {
  if (edges.length === 0) return el('p', { id, class: 'muted' }, 'none');
  return el(
    'ul',
    { id },
    ...edges.map((edge) => {
      const near = far === 'provider' ? edge.consumer : edge.provider;
      const other = edge[far];
      return el(
        'li',
        {},
        `${near.module} ${far === 'provider' ? '→' : '←'} `,
        nodeLink(other.node, context),
        `/${other.module} (${edge.kind})`,
        edge.minted
          ? null
          : notMinted(waiting.get(`${edge.consumer.module}>${edge.provider.node}/${edge.provider.module}`)),
      );
    }),
  );
}

/** @param {readonly string[] | undefined} waitingFor */
const notMinted = (waitingFor) =>
  waitingFor
    ? el('span', { class: 'warn waiting' }, ` waiting for ${waitingFor.join(' and ')} to enrol`)
    : el('span', { class: 'muted' }, ' not pushed yet');

/**
 * How many of the node's relations wait for an enrolment, naming the nodes (`GET /status`'s
 * `waiting`); null when none waits.
 * @param {NodeDetails} d
 * @param {PanelContext} context
 */
function waitingLine(d, context) {
  const waiting = d.waiting;
  if (!waiting) return null;
  const more = waiting.nodes - waiting.for.length;
  const names = waiting.for.flatMap((node, at) => [at > 0 ? ', ' : '', nodeLink(node, context)]);
  return el(
    'p',
    { id: 'waiting', class: 'warn' },
    `${waiting.relations} ${waiting.relations === 1 ? 'relation waits' : 'relations wait'} for `,
    ...names,
    more > 0 ? ` and ${more} more` : '',
    ' to enrol: not minted until then; that enrolment delivers both sides',
  );
}

/**
 * healthy, unhealthy, checking (a check's verdict on the applied revision still to come) or no
 * check; none for a host that never reported its health.
 * @param {NodeDetails['health']} health
 */
function healthBadge(health) {
  if (!health) return null;
  if (health.state === 'unknown') return badge(health.check ? 'checking' : 'no check', 'offline');
  return badge(health.state, health.state === 'healthy' ? 'online' : 'failed');
}

/** @param {NodeDetails} d @param {number} now */
function healthFact(d, now) {
  const health = d.health;
  if (!health) return 'unknown: its host reported none';
  return el(
    'span',
    { id: 'health' },
    healthBadge(health),
    ` revision ${health.revision}${health.reason ? `: ${health.reason}` : ''}, since `,
    when(health.since, now),
  );
}

/** @param {NonNullable<NodeDetails['revert']>} revert */
function revertFact(revert) {
  return revert.ok
    ? `revision ${revert.from} given up for ${revert.to} (${revert.cause})`
    : `revision ${revert.from} given up, applying ${revert.to} again failed (${revert.cause})`;
}

/** The ends of the apply command's stderr and the check's output, as the host reported them (secrets redacted). @param {NodeDetails} d */
function outputs(d) {
  const output = d.output;
  if (!output) return [];
  return [
    el('h3', {}, 'Output (its end)'),
    output.apply
      ? el(
          'details',
          {},
          el('summary', {}, 'apply command (stderr)'),
          el('pre', { id: 'apply-output' }, output.apply),
        )
      : null,
    output.check
      ? el(
          'details',
          { open: '' },
          el('summary', {}, 'check'),
          el('pre', { id: 'check-output' }, output.check),
        )
      : null,
  ];
}

/** @param {NodeDetails} d @param {PanelContext} context */
export function nodePanel(d, context) {
  const now = context.nowMs;
  const state = [
    d.behind ? badge('behind') : d.enrolled ? badge('up to date', 'up-to-date') : null,
    d.presence ? badge(d.presence) : null,
    d.enrolled ? null : badge(d.appliedRevision === null ? 'never enrolled' : 'not enrolled', 'offline'),
    d.heldBack ? badge(`held back by ${d.heldBack.replace(':', ' ')}`, 'held') : null,
    d.waiting ? badge(`${d.waiting.relations} waiting`, 'waiting') : null,
    healthBadge(d.health),
  ];
  const applied = d.appliedRevision === null ? 'never' : `${d.appliedRevision}`;
  const token = d.token;
  return [
    el('h2', { id: 'node-title' }, d.node, ...state),
    waitingLine(d, context),
    facts([
      [
        'sent',
        d.sentRevision === null
          ? 'never'
          : el('span', {}, `revision ${d.sentRevision}, `, when(d.sentAt, now)),
      ],
      ['applied', d.appliedAt ? el('span', {}, `revision ${applied}, `, when(d.appliedAt, now)) : applied],
      [
        'last report',
        d.report
          ? `${d.report.state ?? '–'} revision ${d.report.revision ?? '–'}${d.report.step ? ` (${d.report.step})` : ''}`
          : 'none',
      ],
      ['last heard', when(d.lastHeard, now)],
      ['behind since', d.markedAt ? when(d.markedAt, now) : '–'],
      ['health', healthFact(d, now)],
      ...(d.revert ? [/** @type {[string, string]} */ (['reverted', revertFact(d.revert)])] : []),
    ]),
    ...outputs(d),
    el('h3', {}, 'Modules'),
    d.modules.length === 0
      ? el('p', { class: 'muted' }, 'none: mesh assign NODE MODULE')
      : el(
          'ul',
          { id: 'modules' },
          ...d.modules.map((m) =>
            el(
              'li',
              {},
              m.module,
              m.version ? ` ${m.version}` : '',
              m.provides ? ` (provides ${m.provides})` : '',
            ),
          ),
        ),
    el('h3', {}, 'Consumes'),
    relationList(d.consumes, 'provider', 'consumes', context, waitingIn(d.declaration)),
    el('h3', {}, 'Consumed by'),
    relationList(d.consumedBy, 'consumer', 'consumed-by', context),
    el('h3', {}, 'Machine'),
    d.facts
      ? facts([
          ['os', `${d.facts.os}${d.facts.osVersion ? ` (${d.facts.osVersion})` : ''}`],
          ['kernel', d.facts.kernel],
          ['arch', d.facts.arch],
          ['agent', `mesh-host ${d.facts.agent}${d.facts.build ? ` (build ${d.facts.build})` : ''}`],
          ['cpus', String(d.facts.cpus)],
          ['memory', `${(d.facts.memoryBytes / 1024 ** 3).toFixed(1)} GiB`],
          ['booted', when(d.facts.bootedAt, now)],
        ])
      : el('p', { class: 'muted', id: 'machine-unknown' }, 'its host has said nothing of its machine yet'),
    el('h3', {}, 'Enrolment'),
    facts([
      ['enrolled', d.enrolledAt ? when(d.enrolledAt, now) : 'no'],
      ['key', d.thumbprint ?? '–'],
      [
        'token',
        token
          ? el('span', {}, badge(token.state), ` ${token.tokenId}, valid until ${token.validUntil}`)
          : 'none issued',
      ],
    ]),
    el('h3', {}, 'Declaration as last sent'),
    d.declarationParts !== null
      ? el(
          'p',
          { class: 'muted' },
          `revision ${d.sentRevision}, kept in ${d.declarationParts} parts: too large to show here; mesh declaration ${d.node}`,
        )
      : d.declaration === null
        ? el('p', { class: 'muted' }, 'nothing sent yet')
        : el(
            'details',
            {},
            el(
              'summary',
              {},
              `revision ${d.sentRevision}, digest ${(d.sentDigest ?? '').slice(0, 12)}… (secrets hidden)`,
            ),
            el('pre', { id: 'declaration' }, JSON.stringify(d.declaration, null, 2)),
          ),
  ];
}

/**
 * @param {{ title: string, lines: string[], members: MeshNode[] }} box
 * @param {PanelContext} context
 */
export function groupPanel(box, context) {
  const members = [...box.members].sort(
    (a, b) => Number(b.behind) - Number(a.behind) || a.node.localeCompare(b.node),
  );
  return [
    el('h2', {}, `${box.title}: ${box.lines[0] ?? ''}`),
    el('p', { class: 'muted' }, box.lines[1] ?? ''),
    el(
      'table',
      { id: 'members' },
      el(
        'tbody',
        {},
        ...members.map((n) =>
          el(
            'tr',
            {},
            el('td', {}, nodeLink(n.node, context)),
            el('td', {}, n.behind ? badge('behind') : ''),
            el('td', {}, n.presence ?? ''),
            el('td', {}, `sent ${n.sentRevision ?? '–'} · applied ${n.appliedRevision ?? '–'}`),
          ),
        ),
      ),
    ),
  ];
}

/** @param {PushRecordView} push */
function pushWhat(push) {
  if (push.request.node) return `push ${push.request.node}`;
  return `push --behind${push.request.full ? ' --full' : ''}`;
}

/** @param {PushRecordView} push */
function pushOutcome(push) {
  if (push.state === 'running') return badge('running');
  if (push.state === 'unfinished') return badge('no answer recorded', 'unfinished');
  if (push.outcome === 'failed') return badge(`failed: ${push.error ?? 'unknown'}`, 'failed');
  if (push.outcome === 'still-behind') return badge(`${push.behindCount} still behind`, 'still-behind');
  return badge('consistent');
}

/** @param {readonly PushRecordView[]} pushes @param {PanelContext} context */
export function pushesPanel(pushes, context) {
  if (pushes.length === 0)
    return [el('p', { class: 'muted' }, 'No push kept yet (records are kept 90 days).')];
  return pushes.map((push) => {
    const sent = (push.pushed ? 1 : 0) + push.flushedCount;
    const who = push.requestedBy.split('/').pop() ?? push.requestedBy;
    return el(
      'details',
      { class: 'entry push', 'data-push': push.id },
      el(
        'summary',
        {},
        when(push.startedAt, context.nowMs),
        ` ${pushWhat(push)} by ${who} `,
        pushOutcome(push),
        ` ${sent} sent`,
      ),
      el(
        'ul',
        {},
        el('li', {}, `id ${push.id}, asked by ${push.requestedBy}`),
        push.pushed
          ? el(
              'li',
              {},
              'pushed ',
              nodeLink(push.pushed.node, context),
              ` at revision ${push.pushed.revision}`,
            )
          : null,
        ...push.flushed.map((f) =>
          el(
            'li',
            {},
            'flushed ',
            nodeLink(f.node, context),
            ` at revision ${f.revision} (round ${f.round})`,
          ),
        ),
        push.flushedCount > push.flushed.length
          ? el('li', { class: 'muted' }, `and ${push.flushedCount - push.flushed.length} more`)
          : null,
        push.behind.length > 0 ? el('li', {}, `still behind: ${push.behind.join(', ')}`) : null,
      ),
    );
  });
}

/** @param {{ letters: DeadLetterNote[], queue: DeadLetterDepth | null }} answer @param {PanelContext} context */
export function lettersPanel(answer, context) {
  const { letters, queue } = answer;
  const count = queue
    ? `The dead-letter queue holds about ${queue.approximateMessages} (${queue.approximateInFlight} being read).`
    : 'The dead-letter queue could not be counted.';
  const unnoted = queue !== null && queue.approximateMessages > letters.filter((l) => l.copied).length;
  return [
    el('p', { class: 'muted', id: 'letters-count' }, `${letters.length} noted in the last 14 days. ${count}`),
    unnoted && letters.length < 50
      ? el(
          'p',
          {},
          'Some copies on the queue were not noted here (the store was away when they were let go): read the queue itself.',
        )
      : null,
    letters.length === 0 ? el('p', { class: 'muted' }, 'Nothing was let go or dead-lettered.') : null,
    ...letters.map((letter) =>
      el(
        'details',
        { class: 'entry letter', 'data-message': letter.messageId },
        el(
          'summary',
          {},
          when(letter.notedAt, context.nowMs),
          ' ',
          badge(letter.kind),
          ` ${letter.type ?? 'message'} ${letter.subject ?? ''}`,
        ),
        el('p', { class: 'reason' }, letter.reason),
        el(
          'p',
          { class: 'muted' },
          `${letter.copied ? 'copied to the dead-letter queue' : 'not copied to the dead-letter queue'}; received ${letter.receiveCount} times, first ${letter.firstReceivedAt}; message ${letter.messageId}`,
        ),
        el('pre', {}, letter.body + (letter.bodyBytes > letter.body.length ? ' …' : '')),
      ),
    ),
  ];
}

/**
 * A node's latest audit records (docs/audit.md): what was done to it, when and by whom.
 * @param {readonly AuditRecord[]} records @param {PanelContext} context
 */
export function auditList(records, context) {
  return [
    el('h3', {}, 'Recent changes'),
    records.length === 0
      ? el('p', { id: 'audit', class: 'muted' }, 'none recorded')
      : el(
          'ul',
          { id: 'audit' },
          ...records.map((r) => el('li', {}, when(r.time, context.nowMs), ` ${r.action} by ${r.principal}`)),
        ),
  ];
}
