// @ts-check
import { ago, el } from './dom.js';

/**
 * The fleet view (docs/console.md, "The fleet"): tiles that count the mesh by one grouping, from
 * `GET /summary` alone, and a table of nodes read a page at a time from `GET /nodes`. Nothing
 * here reads the whole mesh: a tile is a count the summary keeps, and its click is a filter the
 * table's next read asks the server for.
 *
 * @typedef {import('../../../../server/core/summary/summary.ts').Summary} Summary
 * @typedef {import('../../../../server/core/views/views.ts').ListedNode} ListedNode
 * @typedef {'applied' | 'behind' | 'held' | 'failed' | 'unhealthy' | 'offline' | 'unenrolled' | 'pending' | 'plain'} StateClass
 * @typedef {{ state?: string, module?: string, on?: string, prefix?: string }} TableFilter
 * @typedef {{ id: string, title: string, count: number | null, parts: Array<{ state: StateClass, count: number, text: string }>,
 *   note?: string, filter?: TableFilter, rollout?: string, grouping?: string }} Tile
 */

/** Rows a read of the table asks for. */
export const tableRows = 50;
/** A mesh of up to this many nodes is drawn whole under the table; a larger one when asked. */
export const wholeGraphNodes = 200;

/** The groupings the tiles offer besides label keys, in the order of the select. */
export const groupings = /** @type {const} */ ([
  ['state', 'state'],
  ['module', 'module'],
  ['health', 'health'],
  ['agent', 'agent version'],
  ['os', 'OS'],
  ['holds', 'rollouts, held back, frozen'],
]);

/** The state filters of `GET /nodes` the table offers, as the select names them. */
export const stateFilters = /** @type {const} */ ([
  ['', 'any state'],
  ['current', 'up to date'],
  ['behind', 'behind'],
  ['failed', 'failed'],
  ['unhealthy', 'unhealthy'],
  ['offline', 'offline'],
  ['unenrolled', 'never enrolled'],
]);

const count = (/** @type {number} */ n) => n.toLocaleString('en');

/** @param {Summary} summary @param {string} grouping @returns {Tile[]} */
export function tilesOf(summary, grouping) {
  if (grouping === 'module') return moduleTiles(summary);
  if (grouping === 'health') return healthTiles(summary);
  if (grouping === 'agent')
    return factTiles(summary.agents, 'agent', 'no host has said its agent version yet');
  if (grouping === 'os') return factTiles(summary.systems, 'os', 'no host has said its OS yet');
  if (grouping === 'holds') return holdTiles(summary);
  if (grouping.startsWith('label:')) return labelTiles(summary, grouping.slice('label:'.length));
  return stateTiles(summary);
}

/** @param {Summary} s @returns {Tile[]} */
function stateTiles(s) {
  const failed = s.revisions.reduce((sum, r) => sum + r.failed, 0);
  const held = (s.heldBack?.rollouts ?? []).reduce((sum, r) => sum + r.notSent, 0);
  const freezes = s.heldBack?.freezes.length ?? 0;
  const current = Math.max(0, s.nodes - s.behind);
  const unenrolled = Math.max(0, s.nodes - s.enrolled);
  /** @type {(id: string, title: string, n: number, state: StateClass, filter?: TableFilter) => Tile} */
  const one = (id, title, n, state, filter) => ({
    id,
    title,
    count: n,
    parts: [{ state, count: n, text: title }],
    ...(filter ? { filter } : {}),
  });
  return [
    {
      id: 'all',
      title: 'all nodes',
      count: s.nodes,
      parts: [
        { state: 'applied', count: current, text: 'up to date' },
        { state: 'behind', count: s.behind, text: 'behind' },
      ],
      filter: {},
    },
    one('current', 'up to date', current, 'applied', { state: 'current' }),
    one('behind', 'behind', s.behind, 'behind', { state: 'behind' }),
    {
      ...one('held', 'held back', held, 'held'),
      grouping: 'holds',
      // a freeze's nodes are not counted by the summary: the tile says it holds some
      note: [
        held ? 'by rollouts' : '',
        freezes ? `and ${freezes === 1 ? '1 freeze' : `${freezes} freezes`} in force` : '',
      ]
        .filter(Boolean)
        .join(' ')
        .concat(held || freezes ? ': see what holds' : ''),
    },
    one('failed', 'failed', failed, 'failed', { state: 'failed' }),
    one('unhealthy', 'unhealthy', s.health.unhealthy, 'unhealthy', { state: 'unhealthy' }),
    one('offline', 'offline', s.offline ?? 0, 'offline', { state: 'offline' }),
    one('unenrolled', 'never enrolled', unenrolled, 'unenrolled', { state: 'unenrolled' }),
  ];
}

/** One tile a module: its carriers, how many run a carried version, how many failed one. @param {Summary} s */
function moduleTiles(s) {
  /** @type {Map<string, { carriers: number, applied: number, failed: number, versions: string[] }>} */
  const modules = new Map();
  for (const v of s.modules) {
    const m = modules.get(v.module) ?? { carriers: 0, applied: 0, failed: 0, versions: [] };
    if (v.carriers > 0) {
      m.carriers += v.carriers;
      m.applied += v.applied;
      m.failed += v.failed;
      m.versions.push(`${v.version ?? 'no version'} on ${count(v.carriers)}`);
    }
    modules.set(v.module, m);
  }
  return [...modules]
    .filter(([, m]) => m.carriers > 0)
    .map(([module, m]) => {
      const applied = Math.min(m.applied, m.carriers);
      const failed = Math.min(m.failed, m.carriers - applied);
      return /** @type {Tile} */ ({
        id: `module:${module}`,
        title: module,
        count: m.carriers,
        parts: [
          { state: 'applied', count: applied, text: 'run the version they carry' },
          { state: 'failed', count: failed, text: 'failed it' },
          { state: 'pending', count: m.carriers - applied - failed, text: 'not applied yet' },
        ],
        note: m.versions.join(', '),
        filter: { module },
      });
    });
}

/** @param {Summary} s @returns {Tile[]} */
function healthTiles(s) {
  return [
    {
      id: 'health:healthy',
      title: 'healthy',
      count: s.health.healthy,
      parts: [{ state: 'applied', count: s.health.healthy, text: 'healthy' }],
    },
    {
      id: 'health:unhealthy',
      title: 'unhealthy',
      count: s.health.unhealthy,
      parts: [{ state: 'unhealthy', count: s.health.unhealthy, text: 'unhealthy' }],
      filter: { state: 'unhealthy' },
    },
    {
      id: 'health:unknown',
      title: 'health unknown',
      count: s.health.unknown,
      parts: [{ state: 'pending', count: s.health.unknown, text: 'no check, or no verdict yet' }],
      note: 'no check, or no verdict yet',
    },
  ];
}

/**
 * @param {Summary['agents']} counts @param {'agent' | 'os'} fact @param {string} none
 * @returns {Tile[]}
 */
function factTiles(counts, fact, none) {
  if (!counts?.length) return [{ id: `${fact}:none`, title: none, count: null, parts: [] }];
  return counts.map((c) => ({
    id: `${fact}:${c.value}`,
    title: c.value,
    count: c.nodes,
    parts: [{ state: 'plain', count: c.nodes, text: c.value }],
    filter: { on: `${fact}=${c.value}` },
  }));
}

/** @param {Summary} s @param {string} key @returns {Tile[]} */
function labelTiles(s, key) {
  const counted = s.labels?.find((l) => l.key === key);
  if (!counted)
    return [{ id: `label:${key}:none`, title: `no node has the label ${key}`, count: null, parts: [] }];
  const labelled = counted.values.reduce((sum, v) => sum + v.nodes, 0) + (counted.otherNodes ?? 0);
  /** @type {Tile[]} */
  const tiles = counted.values.map((v) => ({
    id: `label:${key}=${v.value}`,
    title: `${key}=${v.value}`,
    count: v.nodes,
    parts: [{ state: 'plain', count: v.nodes, text: `${key}=${v.value}` }],
    filter: { on: `${key}=${v.value}` },
  }));
  if (counted.otherValues)
    tiles.push({
      id: `label:${key}:others`,
      title: `${count(counted.otherValues)} more values`,
      count: counted.otherNodes ?? 0,
      parts: [{ state: 'plain', count: counted.otherNodes ?? 0, text: 'other values' }],
      note: `filter with ${key}=VALUE`,
    });
  const without = Math.max(0, s.nodes - labelled);
  if (without > 0)
    tiles.push({
      id: `label:!${key}`,
      title: `without ${key}`,
      count: without,
      parts: [{ state: 'pending', count: without, text: `without ${key}` }],
      filter: { on: `!${key}` },
    });
  return tiles;
}

/** @param {Summary} s @returns {Tile[]} */
function holdTiles(s) {
  const rollouts = s.heldBack?.rollouts ?? [];
  const freezes = s.heldBack?.freezes ?? [];
  if (rollouts.length + freezes.length === 0)
    return [{ id: 'holds:none', title: 'nothing holds a node back', count: null, parts: [] }];
  return [
    ...rollouts.map(
      (r) =>
        /** @type {Tile} */ ({
          id: `rollout:${r.id}`,
          title: `rollout ${r.id}`,
          count: r.notSent,
          parts: [{ state: 'held', count: r.notSent, text: 'not sent yet' }],
          note: `${r.state}: ${count(r.notSent)} not sent yet; its waves`,
          rollout: r.id,
        }),
    ),
    ...freezes.map(
      (f) =>
        /** @type {Tile} */ ({
          id: `freeze:${f.on}`,
          title: f.on === 'all' ? 'frozen: every node' : `frozen: ${f.on}`,
          count: null,
          parts: [],
          note: `${f.reason}${f.until ? `, until ${f.until}` : ''}`,
          filter: f.on === 'all' ? {} : { on: f.on },
        }),
    ),
  ];
}

/** The grouping's options: the fixed ones, then one a label key the summary counts. @param {Summary | null} s */
export function groupingOptions(s) {
  return [
    ...groupings.map(([value, text]) => ({ value, text })),
    ...(s?.labels ?? []).map((l) => ({ value: `label:${l.key}`, text: `label ${l.key}` })),
  ];
}

/**
 * A tile as a button when it filters or leads somewhere, its bar one segment a state.
 * @param {Tile} tile @param {{ active: boolean, onPick: (tile: Tile) => void }} options
 */
export function tileElement(tile, { active, onPick }) {
  const total = tile.parts.reduce((sum, p) => sum + p.count, 0);
  const shown = tile.parts.filter((p) => p.count > 0);
  const acts = tile.filter !== undefined || tile.rollout !== undefined || tile.grouping !== undefined;
  const label = [
    tile.title,
    tile.count === null ? '' : `${count(tile.count)} nodes`,
    ...shown.filter((p) => p.text !== tile.title).map((p) => `${count(p.count)} ${p.text}`),
    tile.note ?? '',
  ]
    .filter(Boolean)
    .join('; ');
  const body = [
    el('span', { class: 'tile-title' }, tile.title),
    tile.count === null ? null : el('span', { class: 'tile-count' }, count(tile.count)),
    total > 0
      ? el(
          'span',
          { class: 'bar', 'aria-hidden': 'true' },
          ...shown.map((p) => segment(p.state, p.count, `${count(p.count)} ${p.text}`)),
        )
      : null,
    tile.parts.length > 1 && shown.length > 0
      ? el(
          'span',
          { class: 'tile-parts' },
          ...shown.map((p) => el('span', { class: `part s-${p.state}` }, `${count(p.count)} ${p.text}`)),
        )
      : null,
    tile.note ? el('span', { class: 'tile-note' }, tile.note) : null,
  ];
  const state = tile.parts.length === 1 ? ` s-${tile.parts[0]?.state}` : '';
  return acts
    ? el(
        'button',
        {
          type: 'button',
          class: `tile${state}${active ? ' active' : ''}`,
          'data-tile': tile.id,
          'aria-label': label,
          'aria-pressed': String(active),
          onclick: () => onPick(tile),
        },
        ...body,
      )
    : el(
        'div',
        { class: `tile still${state}`, 'data-tile': tile.id, 'aria-label': label, role: 'group' },
        ...body,
      );
}

/**
 * One state's part of a bar, as wide as its count. Its width is set through the element's style
 * object: the page's Content-Security-Policy refuses style attributes, not that.
 * @param {string} state @param {number} n @param {string} title
 */
export function segment(state, n, title) {
  const part = el('span', { class: `seg s-${state}`, title });
  part.style.flexGrow = String(n);
  return part;
}

/** The route of a page of the table: its filter, and where the page before ended. @param {TableFilter} filter @param {string | null} cursor */
export function tableRoute(filter, cursor) {
  const query = new URLSearchParams({ limit: String(tableRows) });
  if (filter.state) query.set(filter.state, 'true');
  if (filter.module) query.set('module', filter.module);
  if (filter.on) query.set('on', filter.on);
  if (filter.prefix) query.set('prefix', filter.prefix);
  if (cursor) query.set('cursor', cursor);
  return `/nodes?${query}`;
}

/** The filter as people read it: `module=web, state behind`. @param {TableFilter} filter */
export function filterText(filter) {
  const state = stateFilters.find(([value]) => value === filter.state)?.[1];
  return [
    filter.module ? `module ${filter.module}` : '',
    filter.on ? `on ${filter.on}` : '',
    filter.state ? `state ${state}` : '',
    filter.prefix ? `named ${filter.prefix}…` : '',
  ]
    .filter(Boolean)
    .join(', ');
}

/**
 * A node's one state for the table, the most pressing first: what an operator acts on.
 * @param {ListedNode} n @returns {{ state: StateClass, text: string, rank: number }}
 */
export function stateOf(n) {
  if (n.reportState === 'failed') return { state: 'failed', text: 'failed', rank: 0 };
  if (n.health?.state === 'unhealthy') return { state: 'unhealthy', text: 'unhealthy', rank: 1 };
  if (n.presence === 'offline') return { state: 'offline', text: 'offline', rank: 2 };
  if (n.heldBack) return { state: 'held', text: `held back by ${n.heldBack}`, rank: 3 };
  if (n.behind) return { state: 'behind', text: 'behind', rank: 4 };
  if (!n.enrolled) return { state: 'unenrolled', text: 'never enrolled', rank: 5 };
  if (n.reportState === 'applying') return { state: 'pending', text: 'applying', rank: 6 };
  if (n.sentRevision !== null && n.appliedRevision !== n.sentRevision)
    return { state: 'pending', text: 'sent, not applied yet', rank: 6 };
  if (n.appliedRevision !== null) return { state: 'applied', text: 'applied', rank: 7 };
  return { state: 'pending', text: 'nothing sent yet', rank: 8 };
}

/** The table's sort keys, as its header buttons name them. */
export const sortKeys = /** @type {const} */ ([
  ['name', 'name'],
  ['state', 'state'],
  ['heard', 'last heard'],
  ['agent', 'agent'],
]);

/**
 * The rows sorted by one key; ties by name, so the order is the same on every refresh.
 * @param {ListedNode[]} rows @param {string} key @param {1 | -1} dir
 */
export function sortRows(rows, key, dir) {
  const byName = (/** @type {ListedNode} */ a, /** @type {ListedNode} */ b) =>
    a.node < b.node ? -1 : a.node > b.node ? 1 : 0;
  /** @type {(a: ListedNode, b: ListedNode) => number} */
  const compare =
    key === 'state'
      ? (a, b) => stateOf(a).rank - stateOf(b).rank
      : key === 'heard'
        ? // newest first when ascending: what an operator looks for is who was heard from, and who not
          (a, b) => Date.parse(b.lastHeard ?? '1970-01-01') - Date.parse(a.lastHeard ?? '1970-01-01')
        : key === 'agent'
          ? (a, b) => versionCompare(a.facts?.agent, b.facts?.agent)
          : () => 0;
  return [...rows].sort((a, b) => dir * (compare(a, b) || byName(a, b)));
}

/** Dotted versions by their numbers (`1.10.0` after `1.9.2`); none last. @param {string | undefined} a @param {string | undefined} b */
function versionCompare(a, b) {
  if (a === b) return 0;
  if (a === undefined) return 1;
  if (b === undefined) return -1;
  const x = a.split(/[.-]/);
  const y = b.split(/[.-]/);
  for (let i = 0; i < Math.max(x.length, y.length); i += 1) {
    const p = x[i] ?? '';
    const q = y[i] ?? '';
    const d = /^\d+$/.test(p) && /^\d+$/.test(q) ? Number(p) - Number(q) : p < q ? -1 : p > q ? 1 : 0;
    if (d !== 0) return d;
  }
  return 0;
}

/**
 * One row a node: its name a button that shows its neighbourhood and details.
 * @param {ListedNode} n @param {{ nowMs: number, selected: string | null, onNode: (node: string) => void }} context
 */
export function rowElement(n, context) {
  const s = stateOf(n);
  const labels = Object.entries(n.labels ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');
  return el(
    'tr',
    { 'data-row': n.node, class: context.selected === n.node ? 'selected' : '' },
    el(
      'th',
      { scope: 'row' },
      el('button', { type: 'button', class: 'link', onclick: () => context.onNode(n.node) }, n.node),
    ),
    el('td', {}, el('span', { class: `state s-${s.state}` }, s.text)),
    el('td', {}, n.modules.map((m) => (m.version ? `${m.module} ${m.version}` : m.module)).join(', ') || '–'),
    el('td', { class: 'num' }, `${n.sentRevision ?? '–'} / ${n.appliedRevision ?? '–'}`),
    el('td', { title: n.lastHeard ?? '' }, ago(n.lastHeard, context.nowMs)),
    el('td', {}, n.facts?.agent ?? '–'),
    el('td', {}, n.facts?.os ?? '–'),
    el('td', { class: 'labels' }, labels || '–'),
  );
}
