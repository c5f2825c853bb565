// @ts-check
import { el, replaceChildren } from './dom.js';
import { firstPageNodes, groupRoute, LoadedMesh, labelKeys, searchRoutes, showSummaryTile } from './fleet.js';
import { GraphView } from './graph-view.js';
import { arrange, groupAbove } from './layout.js';
import { auditList, groupPanel, lettersPanel, nodePanel, pushesPanel } from './panels.js';
import { rolloutsPanel } from './rollouts.js';

/**
 * The console: one page over the read routes (GET /graph, /nodes/{node}, /pushes,
 * /dead-letters), refreshed on a timer while the page is visible, never reloaded whole. A mesh
 * larger than the first page of /graph is drawn from the nodes loaded so far (fleet.js).
 *
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
  } catch (error) {
    const gone = /** @type {{ status?: number }} */ (error).status === 404;
    replaceChildren(
      panel,
      el('p', { class: 'muted' }, gone ? `${selected.node} is no longer in the mesh.` : String(error)),
    );
  }
}

async function refresh() {
  context.nowMs = Date.now();
  try {
    const [graph, pushes, letters, summary, rollouts] = await Promise.all([
      api(`/graph?limit=${firstPageNodes}`),
      api('/pushes?limit=25'),
      api('/dead-letters?limit=50'),
      api('/summary'),
      api('/rollouts?limit=20'),
    ]);
    if (graph.next) showSummaryTile(byId('summary-tile'), summary);
    if (graph.next && !state.fleet) state.fleet = new LoadedMesh(graph);
    else state.fleet?.add(graph);
    state.graph = state.fleet ? state.fleet.graph() : graph;
    if (!state.groupedChosen) {
      state.view.grouped = state.fleet !== null || graph.nodes.length > groupAbove;
      input('grouped').checked = state.view.grouped;
    }
    drawGraph();
    replaceChildren(byId('panel-pushes'), ...pushesPanel(pushes.pushes, context));
    replaceChildren(byId('panel-rollouts'), ...rolloutsPanel(rollouts.rollouts, context));
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
