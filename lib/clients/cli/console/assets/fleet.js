// @ts-check
import { el, replaceChildren } from './dom.js';

/**
 * The console over a mesh larger than one page of `GET /graph` (docs/console.md, "A fleet"):
 * the first page is drawn at once, grouped, and more nodes are loaded only when asked for: a
 * search (names that start with it, nodes that carry a module of that name), a group opened
 * (the nodes that carry its first module), or "more" (the next page). Nothing waits for the
 * whole mesh. A mesh that fits on the first page is drawn as it always was.
 *
 * @typedef {import('../../../../server/core/views/views.ts').MeshGraph} MeshGraph
 * @typedef {import('../../../../server/core/views/views.ts').MeshNode} MeshNode
 * @typedef {import('../../../../server/core/views/views.ts').MeshEdge} MeshEdge
 * @typedef {MeshGraph & { next?: string }} GraphPage
 */

/** Nodes on the first page: a mesh of up to this many is drawn whole, as before pages. */
export const firstPageNodes = 400;
/** Nodes a search or an opened group loads at once. */
export const loadNodes = 200;

const edgeKey = (/** @type {MeshEdge} */ e) =>
  `${e.consumer.node}/${e.consumer.module}>${e.provider.node}/${e.provider.module}`;

/** The nodes loaded so far, and where the walk of the whole mesh stopped. */
export class LoadedMesh {
  /** @type {Map<string, MeshNode>} */ #nodes = new Map();
  /** @type {Map<string, MeshEdge>} */ #edges = new Map();
  /** The cursor of the next page, or null once every page was read. @type {string | null} */
  next = null;

  /** @param {GraphPage} page */
  constructor(page) {
    this.add(page);
    this.next = page.next ?? null;
  }

  /** Newer copies of a node replace older ones; nodes not on the page stay as they were. @param {MeshGraph} page */
  add(page) {
    for (const node of page.nodes) this.#nodes.set(node.node, node);
    for (const edge of page.edges) this.#edges.set(edgeKey(edge), edge);
  }

  /** @returns {MeshGraph} */
  graph() {
    const nodes = [...this.#nodes.values()].sort((a, b) => a.node.localeCompare(b.node));
    // A relation is drawn once both its ends are loaded.
    const edges = [...this.#edges.values()].filter(
      (e) => this.#nodes.has(e.consumer.node) && this.#nodes.has(e.provider.node),
    );
    return { nodes, edges };
  }

  get size() {
    return this.#nodes.size;
  }
}

const searchable = /^[a-z0-9-]{1,63}$/;

/**
 * The pages a search term loads: nodes whose name starts with it, and nodes that carry a module
 * of that name (a term that is not a name loads nothing).
 * @param {string} term
 * @returns {string[]}
 */
export function searchRoutes(term) {
  const t = term.trim().toLowerCase();
  if (!searchable.test(t)) return [];
  return [
    `/graph?prefix=${encodeURIComponent(t)}&limit=${loadNodes}`,
    `/graph?module=${encodeURIComponent(t)}&limit=${loadNodes}`,
  ];
}

/**
 * The page a group opened loads: the nodes of its label value when grouped by a label (the
 * group's own text is the selector), else the nodes that carry its first module.
 * @param {MeshNode | undefined} member @param {string} group @param {string | undefined} groupBy
 */
export function groupRoute(member, group, groupBy) {
  if (groupBy) return `/graph?on=${encodeURIComponent(group)}&limit=${loadNodes}`;
  const module = member?.modules[0]?.module;
  return module ? `/graph?module=${encodeURIComponent(module)}&limit=${loadNodes}` : null;
}

/** The label keys of the nodes loaded, sorted: what the graph may be grouped by. @param {MeshGraph} graph */
export function labelKeys(graph) {
  return [...new Set(graph.nodes.flatMap((n) => Object.keys(n.labels ?? {})))].sort();
}

/**
 * The summary tile: the mesh counted without reading it (`GET /summary`, docs/http-api.md),
 * so the first screen of a mesh of any size says how it stands before any node is loaded: the
 * newest revision's applied count, and the failed ones of every revision (a node counts once
 * there: its latest report). Shown only for a mesh larger than the graph's first page.
 * @param {HTMLElement} tile
 * @param {import('../../../../server/core/summary/summary.ts').Summary} summary
 */
export function showSummaryTile(tile, summary) {
  const count = (/** @type {number} */ n) => n.toLocaleString('en');
  const newest = summary.revisions.at(-1);
  const failed = summary.revisions.reduce((sum, r) => sum + r.failed, 0);
  replaceChildren(
    tile,
    el('strong', {}, `${count(summary.nodes)} nodes`),
    ` · ${count(summary.enrolled)} enrolled · ${count(summary.online)} online · `,
    el('span', { class: summary.behind ? 'warn' : '' }, `${count(summary.behind)} behind`),
    newest ? ` · revision ${newest.revision} applied on ${count(newest.applied)} · ` : ' · ',
    el('span', { class: failed ? 'warn' : '' }, `${count(failed)} failed`),
    summary.health
      ? el(
          'span',
          { class: summary.health.unhealthy ? 'warn' : '', id: 'summary-health' },
          ` · ${count(summary.health.healthy)} healthy · ${count(summary.health.unhealthy)} unhealthy`,
        )
      : '',
    summary.waiting
      ? el(
          'span',
          { class: 'warn', id: 'summary-waiting' },
          ` · ${count(summary.waiting.relations)} relations waiting for an enrolment on ${count(summary.waiting.nodes)} nodes`,
        )
      : '',
    summary.nodes > summary.enrolled ? ` · ${count(summary.nodes - summary.enrolled)} never enrolled` : '',
    summary.heldBack
      ? el(
          'span',
          { class: 'warn', id: 'summary-held-back' },
          ` · held back: ${[
            ...summary.heldBack.rollouts.map((r) => `${count(r.notSent)} by rollout ${r.id} (${r.state})`),
            ...summary.heldBack.freezes.map((f) => `freeze ${f.on === 'all' ? '--all' : f.on}`),
          ].join(', ')}`,
        )
      : '',
    summary.agents?.length
      ? el(
          'span',
          { id: 'summary-agents' },
          ` · agents ${summary.agents.map((a) => `${a.value} on ${count(a.nodes)}`).join(', ')}`,
        )
      : '',
    summary.systems?.length
      ? el(
          'span',
          { id: 'summary-systems' },
          ` · ${summary.systems.map((s) => `${s.value} on ${count(s.nodes)}`).join(', ')}`,
        )
      : '',
    summary.exact ? '' : ' (counting again)',
  );
  tile.hidden = false;
}
