// @ts-check
import { el, replaceChildren } from './dom.js';
import { firstPageNodes, groupRoute, LoadedMesh, labelKeys, searchRoutes, showSummaryTile } from './fleet.js';
import {
  filterText,
  groupingOptions,
  rowElement,
  sortKeys,
  sortRows,
  stateFilters,
  tableRoute,
  tableRows,
  tileElement,
  tilesOf,
  wholeGraphNodes,
} from './fleet-view.js';
import { GraphView } from './graph-view.js';
import { arrange, groupAbove } from './layout.js';
import { neighbourhoodSvg, secondHopOf } from './neighbourhood.js';
import { auditList, groupPanel, lettersPanel, nodePanel, pushesPanel } from './panels.js';
import { rolloutsPanel } from './rollouts.js';

/**
 * The console: one page over the read routes (GET /summary, /nodes, /graph, /nodes/{node},
 * /pushes, /rollouts, /dead-letters), refreshed on a timer while the page is visible, never
 * reloaded whole. The fleet view (fleet-view.js) counts the mesh from the summary and pages its
 * table from /nodes; the whole graph is read only for a small mesh or when asked for, and a mesh
 * larger than the first page of /graph is drawn from the nodes loaded so far (fleet.js).
 *
 * @typedef {import('../../../../server/core/summary/summary.ts').Summary} Summary
 * @typedef {import('../../../../server/core/views/views.ts').ListedNode} ListedNode
 * @typedef {import('../../../../server/core/views/views.ts').NodeDetails} NodeDetails
 * @typedef {import('../../../../server/core/rollout/pages.ts').RolloutAnswer} RolloutAnswer
 * @typedef {import('./fleet-view.js').TableFilter} TableFilter
 * @typedef {import('./fleet-view.js').Tile} Tile
 * @typedef {import('../../../../server/core/views/views.ts').MeshGraph} MeshGraph
 * @typedef {import('./layout.js').Box} Box
 * @typedef {{ kind: 'node', node: string } | { kind: 'group', id: string }} Selection
 */

const byId = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));
const input = (/** @type {string} */ id) => /** @type {HTMLInputElement} */ (byId(id));

/** A route's JSON; a problem answer becomes an Error with the API's message. */
async function api(/** @type {string} */ path) {
  const response = await fetch(path, { headers: { accept: 'application/json' } });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = new Error(body?.error?.message ?? `${path} answered ${response.status}`);
    Object.assign(error, { status: response.status });
    throw error;
  }
  return body;
}

const settings = await api('/console/settings.json');
const state = {
  /** @type {MeshGraph | null} */ graph: null,
  /** The nodes loaded of a mesh larger than one page; null while the mesh fits on one. @type {LoadedMesh | null} */
  fleet: null,
  view: { search: '', trouble: false, grouped: false, groupBy: '' },
  groupedChosen: false,
  /** @type {Selection | null} */ selected: null,
  /** @type {Box[]} */ boxes: [],
  first: true,
  /** @type {Summary | null} */ summary: null,
  /** The whole graph is read and drawn: a small mesh, or asked for. */
  whole: false,
  wholeAsked: false,
  grouping: 'state',
  /** @type {string | null} */ tile: null,
  table: {
    /** @type {TableFilter} */ filter: {},
    /** @type {ListedNode[]} */ rows: [],
    /** @type {string | null} */ next: null,
    sort: 'name',
    /** @type {1 | -1} */ dir: 1,
    /** @type {string | null} */ error: null,
    /** A new filter's first page is being read: the rows shown are none yet. */
    reading: false,
  },
  /** The neighbourhood's hops: its neighbours, or theirs too. */
  hops: 1,
  /** @type {Set<string>} */ openRollouts: new Set(),
  /** @type {Map<string, RolloutAnswer>} */ rolloutAnswers: new Map(),
  /** @type {unknown[]} */ rollouts: [],
};

const graphView = new GraphView(byId('graph'), {
  onSelect: (box) => {
    state.selected =
      box.kind === 'node'
        ? { kind: 'node', node: box.members[0]?.node ?? '' }
        : { kind: 'group', id: box.id };
    showTab('node');
    void showSelection();
    const group = box.id.slice('group:'.length);
    const route =
      box.kind === 'group' && state.fleet ? groupRoute(box.members[0], group, state.view.groupBy) : null;
    if (route) void load([route]).then(showSelection);
  },
});
const context = { nowMs: Date.now(), onNode: (/** @type {string} */ node) => selectNode(node) };

function drawGraph() {
  if (!state.graph) return;
  const groupBy = /** @type {HTMLSelectElement} */ (byId('group-by'));
  const keys = labelKeys(state.graph);
  if (groupBy.options.length !== keys.length + 1)
    replaceChildren(
      groupBy,
      el('option', { value: '' }, 'modules'),
      ...keys.map((key) =>
        el('option', { value: key, selected: key === state.view.groupBy }, `label ${key}`),
      ),
    );
  const arranged = arrange(state.graph, state.view);
  state.boxes = arranged.boxes;
  graphView.render(arranged);
  const note = byId('graph-note');
  note.hidden = !(arranged.grouped || arranged.shown === 0 || state.view.search || state.view.trouble);
  const fleet = state.fleet;
  const groups = state.view.groupBy ? `groups by label ${state.view.groupBy}` : 'groups of the same modules';
  note.hidden &&= !fleet;
  note.textContent = fleet
    ? `${arranged.shown} of ${fleet.size} loaded nodes shown${arranged.grouped ? `, in ${arranged.boxes.length} ${groups}` : ''}; the mesh has more: search a name or module, open a group${fleet.next ? ', or load more' : ''}`
    : arranged.shown === 0
      ? 'nothing to show: no node matches'
      : arranged.grouped
        ? `${arranged.shown} nodes in ${arranged.boxes.length} ${groups}: search to see single nodes`
        : `${arranged.shown} of ${state.graph.nodes.length} nodes shown`;
  const nodes = state.graph.nodes;
  const behind = nodes.filter((n) => n.behind).length;
  const offline = nodes.filter((n) => n.presence === 'offline').length;
  const waiting = nodes.reduce((sum, n) => sum + (n.waiting?.relations ?? 0), 0);
  byId('more').hidden = !fleet?.next;
  replaceChildren(
    byId('summary'),
    el('strong', {}, fleet ? `${nodes.length} nodes loaded` : `${nodes.length} nodes`),
    ' · ',
    el('span', { class: behind ? 'warn' : '' }, `${behind} behind`),
    offline ? ` · ${offline} offline` : '',
    ` · ${state.graph.edges.length} relations`,
    waiting
      ? el('span', { class: 'warn', id: 'waiting-count' }, ` · ${waiting} waiting for an enrolment`)
      : '',
  );
}

function selectNode(/** @type {string} */ node) {
  state.selected = { kind: 'node', node };
  graphView.select(state.boxes.find((b) => b.kind === 'node' && b.members[0]?.node === node)?.id ?? null);
  showTab('node');
  drawTable();
  void showSelection();
}

async function showSelection() {
  const panel = byId('panel-node');
  const selected = state.selected;
  if (!selected) return;
  if (selected.kind === 'group') {
    const box = state.boxes.find((b) => b.id === selected.id);
    if (box) replaceChildren(panel, ...groupPanel(box, context));
    return;
  }
  try {
    const name = encodeURIComponent(selected.node);
    const [details, audit] = await Promise.all([
      api(`/nodes/${name}`),
      // The trail is a help here, not the page: a viewer without it still sees the node.
      api(`/audit?node=${name}&limit=10`).catch(() => ({ records: [] })),
    ]);
    replaceChildren(panel, ...nodePanel(details, context), ...auditList(audit.records, context));
    await showNeighbourhood(details);
  } catch (error) {
    const gone = /** @type {{ status?: number }} */ (error).status === 404;
    replaceChildren(
      panel,
      el('p', { class: 'muted' }, gone ? `${selected.node} is no longer in the mesh.` : String(error)),
    );
  }
}

/** The neighbourhood of the node shown: read its neighbours for a second hop, then draw. @param {NodeDetails} center */
async function showNeighbourhood(center) {
  const around = new Map();
  if (state.hops === 2) {
    const read = await Promise.all(
      secondHopOf(center).map((node) => api(`/nodes/${encodeURIComponent(node)}`).catch(() => null)),
    );
    for (const d of read) if (d) around.set(d.node, d);
  }
  const section = byId('neighbourhood');
  section.hidden = false;
  const providers = new Set(center.consumes.map((e) => e.provider.node)).size;
  const consumers = new Set(center.consumedBy.map((e) => e.consumer.node)).size;
  const nodes = (/** @type {number} */ n) => `${n} ${n === 1 ? 'node' : 'nodes'}`;
  byId('hood-title').textContent =
    providers + consumers === 0
      ? `${center.node}: no relation`
      : `${center.node} consumes from ${nodes(providers)}; ${nodes(consumers)} consume from it`;
  replaceChildren(
    byId('hood-drawing'),
    neighbourhoodSvg(center, around, (node) => selectNode(node)),
  );
}

/** The tiles of the grouping chosen, from the summary read last. */
function drawTiles() {
  const summary = state.summary;
  if (!summary) return;
  const select = /** @type {HTMLSelectElement} */ (byId('tiles-by'));
  const options = groupingOptions(summary);
  if ([...select.options].map((o) => o.value).join() !== options.map((o) => o.value).join())
    replaceChildren(
      select,
      ...options.map((o) => el('option', { value: o.value, selected: o.value === state.grouping }, o.text)),
    );
  if (!options.some((o) => o.value === state.grouping)) state.grouping = 'state';
  select.value = state.grouping;
  replaceChildren(
    byId('tiles'),
    ...tilesOf(summary, state.grouping).map((tile) =>
      tileElement(tile, { active: tile.id === state.tile, onPick: pickTile }),
    ),
  );
  byId('tiles-note').textContent =
    `counted from the summary${summary.exact ? '' : ' (counting again: the counts trail the mesh)'}`;
}

/** A tile picked: its filter on the table, its rollout's waves, or its grouping. @param {Tile} tile */
function pickTile(tile) {
  if (tile.rollout) {
    state.openRollouts.add(tile.rollout);
    showTab('rollouts');
    void refreshRollouts();
    return;
  }
  if (tile.grouping) {
    state.grouping = tile.grouping;
    state.tile = null;
    drawTiles();
    return;
  }
  state.tile = tile.id === state.tile ? null : tile.id;
  setFilter(state.tile === null ? {} : (tile.filter ?? {}));
}

/** A new filter: the table starts again from its first page. @param {TableFilter} filter */
function setFilter(filter) {
  state.table.filter = filter;
  input('filter-on').value = filter.on ?? '';
  /** @type {HTMLSelectElement} */ (byId('filter-state')).value = filter.state ?? '';
  state.table.rows = [];
  state.table.next = null;
  state.table.reading = true;
  drawTiles();
  drawTable();
  void loadTable(false);
}

/**
 * Reads a page of the table: the first again (a refresh, or a new filter), or the next after
 * the rows loaded. Rows of the first page replace their older copies; loaded rows stay.
 * @param {boolean} more
 */
async function loadTable(more) {
  const table = state.table;
  const filter = { ...table.filter };
  try {
    const page = await api(tableRoute(filter, more ? table.next : null));
    if (filterText(filter) !== filterText(state.table.filter)) return;
    table.error = null;
    table.reading = false;
    if (more || table.rows.length <= tableRows) {
      /** @type {Map<string, ListedNode>} */
      const rows = new Map((more ? table.rows : []).map((r) => [r.node, r]));
      for (const row of page.nodes) rows.set(row.node, row);
      table.rows = [...rows.values()];
      table.next = page.next ?? null;
    } else {
      const fresh = new Map(page.nodes.map((/** @type {ListedNode} */ r) => [r.node, r]));
      table.rows = table.rows.map((r) => fresh.get(r.node) ?? r);
    }
  } catch (error) {
    if (filterText(filter) !== filterText(state.table.filter)) return;
    table.reading = false;
    table.error = /** @type {Error} */ (error).message;
    table.rows = [];
    table.next = null;
  }
  drawTable();
}

function drawTable() {
  const table = state.table;
  const selected = state.selected?.kind === 'node' ? state.selected.node : null;
  replaceChildren(
    byId('table-head'),
    ...[
      ...sortKeys,
      ['modules', 'modules'],
      ['revisions', 'sent / applied'],
      ['os', 'OS'],
      ['labels', 'labels'],
    ]
      .sort((a, b) => columnOrder.indexOf(a[0]) - columnOrder.indexOf(b[0]))
      .map(([key, text]) => {
        const sortable = sortKeys.some(([k]) => k === key);
        const sorted = table.sort === key;
        return el(
          'th',
          {
            scope: 'col',
            ...(sortable
              ? { 'aria-sort': sorted ? (table.dir === 1 ? 'ascending' : 'descending') : 'none' }
              : {}),
          },
          sortable
            ? el(
                'button',
                {
                  type: 'button',
                  class: 'sort',
                  'data-sort': key,
                  onclick: () => {
                    table.dir = sorted ? /** @type {1 | -1} */ (-table.dir) : 1;
                    table.sort = key;
                    drawTable();
                  },
                },
                text,
                sorted ? (table.dir === 1 ? ' ▲' : ' ▼') : '',
              )
            : text,
        );
      }),
  );
  const rows = sortRows(table.rows, table.sort, table.dir);
  replaceChildren(byId('nodes-rows'), ...rows.map((r) => rowElement(r, { ...context, selected })));
  const total = state.summary?.nodes;
  const filtered = filterText(table.filter);
  const sortName = sortKeys.find(([k]) => k === table.sort)?.[1];
  const note = byId('table-note');
  note.className = table.error ? 'error' : '';
  note.textContent = table.error
    ? `Cannot read these nodes: ${table.error}`
    : table.reading
      ? `reading the nodes${filtered ? ` (${filtered})` : ''}…`
      : `${rows.length.toLocaleString('en')} ${filtered ? `nodes (${filtered})` : 'nodes'} loaded${
          total !== undefined ? ` of ${total.toLocaleString('en')} in the mesh` : ''
        }${table.next ? '; more to load' : ''}; sorted by ${sortName}${table.next ? ' among those loaded' : ''}`;
  byId('table-more').hidden = !table.next;
  replaceChildren(
    byId('filter-module'),
    table.filter.module
      ? el(
          'button',
          { type: 'button', class: 'chip', onclick: () => setFilter({ ...table.filter, module: undefined }) },
          `module ${table.filter.module} ×`,
        )
      : '',
  );
}
const columnOrder = ['name', 'state', 'modules', 'revisions', 'heard', 'agent', 'os', 'labels'];

/** The rollouts opened, each read again (GET /rollouts/{id}, one node: every wave's counts). */
async function refreshRollouts() {
  await Promise.all(
    [...state.openRollouts].map(async (id) => {
      const answer = await api(`/rollouts/${encodeURIComponent(id)}?limit=1`).catch(() => null);
      if (answer) state.rolloutAnswers.set(id, answer);
    }),
  );
  drawRollouts();
}

function drawRollouts() {
  replaceChildren(
    byId('panel-rollouts'),
    ...rolloutsPanel(/** @type {never} */ (state.rollouts), context, {
      open: state.openRollouts,
      answers: state.rolloutAnswers,
      onToggle: (id, open) => {
        if (open === state.openRollouts.has(id)) return;
        if (open) state.openRollouts.add(id);
        else state.openRollouts.delete(id);
        if (open) void refreshRollouts();
      },
    }),
  );
}

async function refresh() {
  context.nowMs = Date.now();
  try {
    /** @type {Summary} */
    const summary = await api('/summary');
    state.summary = summary;
    state.whole = state.wholeAsked || summary.nodes <= wholeGraphNodes;
    const [graph, pushes, letters, rollouts] = await Promise.all([
      state.whole ? api(`/graph?limit=${firstPageNodes}`) : null,
      api('/pushes?limit=25'),
      api('/dead-letters?limit=50'),
      api('/rollouts?limit=20'),
      loadTable(false),
    ]);
    drawTiles();
    byId('graph').hidden = !state.whole;
    byId('whole-ask').hidden = state.whole;
    byId('whole-ask-text').textContent =
      `The mesh has ${summary.nodes.toLocaleString('en')} nodes: the whole graph is not drawn past ${wholeGraphNodes}; pick a node for its neighbourhood, or`;
    if (graph?.next) showSummaryTile(byId('summary-tile'), summary);
    else byId('summary-tile').hidden = true;
    byId('graph-controls').hidden = !graph;
    if (graph) {
      if (graph.next && !state.fleet) state.fleet = new LoadedMesh(graph);
      else state.fleet?.add(graph);
      state.graph = state.fleet ? state.fleet.graph() : graph;
      if (!state.groupedChosen) {
        state.view.grouped = state.fleet !== null || graph.nodes.length > groupAbove;
        input('grouped').checked = state.view.grouped;
      }
      drawGraph();
    } else {
      replaceChildren(
        byId('summary'),
        el('strong', {}, `${summary.nodes.toLocaleString('en')} nodes`),
        ' · ',
        el('span', { class: summary.behind ? 'warn' : '' }, `${summary.behind.toLocaleString('en')} behind`),
        summary.offline ? ` · ${summary.offline.toLocaleString('en')} offline` : '',
      );
    }
    replaceChildren(byId('panel-pushes'), ...pushesPanel(pushes.pushes, context));
    state.rollouts = rollouts.rollouts;
    await refreshRollouts();
    const unfinished = rollouts.rollouts.filter(
      (/** @type {{ state: string }} */ r) =>
        r.state === 'claiming' || r.state === 'running' || r.state === 'paused' || r.state === 'halted',
    ).length;
    byId('tab-rollouts').textContent = unfinished > 0 ? `Rollouts (${unfinished} not done)` : 'Rollouts';
    replaceChildren(byId('panel-letters'), ...lettersPanel(letters, context));
    byId('tab-letters').textContent = `Dead letters (${letters.letters.length})`;
    await showSelection();
    byId('banner').hidden = true;
    byId('refreshed').textContent = `refreshed ${new Date().toLocaleTimeString()}`;
    if (state.first) {
      state.first = false;
      document.body.dataset.firstRenderMs = String(Math.round(performance.now()));
    }
    document.body.dataset.state = 'ready';
    document.body.dataset.refreshes = String(Number(document.body.dataset.refreshes ?? 0) + 1);
  } catch (error) {
    const banner = byId('banner');
    banner.hidden = false;
    banner.textContent = `Cannot read the mesh: ${/** @type {Error} */ (error).message}. Trying again in ${settings.refreshSeconds} s.`;
  }
}

/** @param {'node' | 'pushes' | 'rollouts' | 'letters'} name */
function showTab(name) {
  for (const tab of ['node', 'pushes', 'rollouts', 'letters']) {
    byId(`tab-${tab}`).setAttribute('aria-selected', String(tab === name));
    byId(`panel-${tab}`).hidden = tab !== name;
  }
}

for (const tab of /** @type {const} */ (['node', 'pushes', 'rollouts', 'letters']))
  byId(`tab-${tab}`).addEventListener('click', () => showTab(tab));
/** Loads pages of /graph into the fleet's nodes and draws again; a page that fails is left out. @param {string[]} routes */
async function load(routes) {
  const fleet = state.fleet;
  if (!fleet) return;
  const pages = await Promise.all(routes.map((route) => api(route).catch(() => null)));
  for (const page of pages) if (page) fleet.add(page);
  state.graph = fleet.graph();
  drawGraph();
}

/** @type {ReturnType<typeof setTimeout> | undefined} */
let searching;
input('search').addEventListener('input', () => {
  state.view.search = input('search').value;
  drawGraph();
  if (!state.whole) {
    // A large mesh's search is the table's: the nodes whose names start with it.
    clearTimeout(searching);
    const term = state.view.search.trim().toLowerCase();
    searching = setTimeout(() => {
      const prefix = /^[a-z0-9-]{1,63}$/.test(term) ? term : undefined;
      setFilter({ ...state.table.filter, prefix });
    }, 250);
    return;
  }
  clearTimeout(searching);
  if (state.fleet) searching = setTimeout(() => void load(searchRoutes(state.view.search)), 250);
});
byId('more').addEventListener('click', async () => {
  const fleet = state.fleet;
  if (!fleet?.next) return;
  const page = await api(`/graph?limit=${firstPageNodes}&cursor=${encodeURIComponent(fleet.next)}`);
  fleet.add(page);
  fleet.next = page.next ?? null;
  state.graph = fleet.graph();
  drawGraph();
});
input('trouble').addEventListener('change', () => {
  state.view.trouble = input('trouble').checked;
  drawGraph();
});
input('grouped').addEventListener('change', () => {
  state.groupedChosen = true;
  state.view.grouped = input('grouped').checked;
  drawGraph();
});
byId('group-by').addEventListener('change', () => {
  state.view.groupBy = /** @type {HTMLSelectElement} */ (byId('group-by')).value;
  drawGraph();
});
byId('tiles-by').addEventListener('change', () => {
  state.grouping = /** @type {HTMLSelectElement} */ (byId('tiles-by')).value;
  drawTiles();
});
replaceChildren(byId('filter-state'), ...stateFilters.map(([value, text]) => el('option', { value }, text)));
byId('filter-state').addEventListener('change', () => {
  state.tile = null;
  setFilter({
    ...state.table.filter,
    state: /** @type {HTMLSelectElement} */ (byId('filter-state')).value || undefined,
  });
});
input('filter-on').addEventListener('keydown', (event) => {
  if (event.key !== 'Enter') return;
  state.tile = null;
  setFilter({ ...state.table.filter, on: input('filter-on').value.trim() || undefined });
});
byId('filter-clear').addEventListener('click', () => {
  state.tile = null;
  setFilter({});
});
byId('table-more').addEventListener('click', () => void loadTable(true));
for (const radio of document.querySelectorAll('input[name="hops"]'))
  radio.addEventListener('change', () => {
    state.hops = Number(/** @type {HTMLInputElement} */ (radio).value);
    void showSelection();
  });
byId('whole-mesh').addEventListener('click', () => {
  state.wholeAsked = true;
  void refresh();
});
byId('zoom-in').addEventListener('click', () => graphView.zoomBy(1.25));
byId('zoom-out').addEventListener('click', () => graphView.zoomBy(0.8));
byId('fit').addEventListener('click', () => graphView.fit());
byId('source').textContent = settings.source;

/** Refreshes while the page is seen; a hidden tab asks nothing (every refresh reads each node). */
async function loop() {
  if (!document.hidden) await refresh();
  setTimeout(loop, settings.refreshSeconds * 1000);
}
void loop();
