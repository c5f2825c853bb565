// @ts-check
/**
 * What the graph shows and where: which nodes are visible, whether they are grouped, and a
 * layered layout with consumers on the left and their providers on the right. Pure: no DOM.
 *
 * @typedef {import('../../../../server/core/views/views.ts').MeshGraph} MeshGraph
 * @typedef {import('../../../../server/core/views/views.ts').MeshNode} MeshNode
 * @typedef {import('../../../../server/core/views/views.ts').MeshEdge} MeshEdge
 * @typedef {{ readonly search: string, readonly trouble: boolean, readonly grouped: boolean, readonly groupBy?: string }} View
 * @typedef {{
 *   id: string, kind: 'node' | 'group', title: string, lines: string[], members: MeshNode[],
 *   behind: number, offline: number, lagging: number, failed: number, unhealthy: number, x: number, y: number
 * }} Box
 * @typedef {{
 *   id: string, from: string, to: string, kind: string, count: number, pending: boolean,
 *   label: string, path: string, labelX: number, labelY: number
 * }} Line
 */

export const boxWidth = 176;
export const boxHeight = 54;
/** Above this many visible nodes the graph starts grouped: a thousand boxes are colour, not reading. */
export const groupAbove = 120;
/** Found nodes are shown with their neighbours when there are at most this many. */
const neighboursUpTo = 50;
const rowGap = 16;
const columnGap = 26;
const layerGap = 170;

/** @param {MeshNode} node */
export const signatureOf = (node) =>
  node.modules.map((m) => (m.provides ? `${m.module} (${m.provides})` : m.module)).join(', ') ||
  '(no modules)';

/**
 * The group a node is in when grouped: its modules, or its value of the label `key` (`key=value`,
 * or `!key` for the nodes without it).
 * @param {MeshNode} node @param {string | undefined} key
 */
export const groupOf = (node, key) => {
  if (!key) return signatureOf(node);
  const value = node.labels?.[key];
  return value === undefined ? `!${key}` : `${key}=${value}`;
};

/** @param {MeshNode} node */
const isLagging = (node) => node.sentRevision !== null && node.appliedRevision !== node.sentRevision;

/**
 * The nodes to show: the trouble filter, then the search (a node's name or a module's), with the
 * neighbours of a few found nodes so each is seen with its relations.
 * @param {MeshGraph} graph
 * @param {View} view
 * @returns {MeshNode[]}
 */
export function visibleNodes(graph, view) {
  let nodes = [...graph.nodes];
  if (view.trouble) nodes = nodes.filter((n) => n.behind || n.presence === 'offline');
  const term = view.search.trim().toLowerCase();
  if (!term) return nodes;
  const found = new Set(
    nodes
      .filter((n) => n.node.includes(term) || n.modules.some((m) => m.module.includes(term)))
      .map((n) => n.node),
  );
  const shown = new Set(found);
  if (found.size <= neighboursUpTo) {
    for (const edge of graph.edges) {
      if (found.has(edge.consumer.node)) shown.add(edge.provider.node);
      if (found.has(edge.provider.node)) shown.add(edge.consumer.node);
    }
  }
  return graph.nodes.filter((n) => shown.has(n.node));
}

/**
 * @param {MeshGraph} graph
 * @param {View} view
 * @returns {{ boxes: Box[], lines: Line[], width: number, height: number, grouped: boolean, shown: number }}
 */
export function arrange(graph, view) {
  const nodes = visibleNodes(graph, view);
  const grouped = view.grouped && nodes.length > 1;
  const boxOf = new Map();
  /** @type {Map<string, Box>} */
  const boxes = new Map();
  const groups = new Map();
  for (const node of nodes) {
    const key = grouped ? groupOf(node, view.groupBy) : node.node;
    groups.set(key, [...(groups.get(key) ?? []), node]);
  }
  for (const [key, members] of groups) {
    const box = members.length === 1 ? nodeBox(members[0]) : groupBox(key, members);
    boxes.set(box.id, box);
    for (const member of members) boxOf.set(member.node, box.id);
  }
  const lines = linesOf(graph.edges, boxOf, grouped);
  const size = place([...boxes.values()], lines);
  return { boxes: [...boxes.values()], lines, ...size, grouped, shown: nodes.length };
}

/** @param {MeshNode} node @returns {Box} */
function nodeBox(node) {
  const revision =
    node.sentRevision === null
      ? 'never sent'
      : `sent ${node.sentRevision} · applied ${node.appliedRevision ?? '–'}`;
  return {
    id: `node:${node.node}`,
    kind: 'node',
    title: node.node,
    lines: [signatureOf(node), revision],
    members: [node],
    ...counts([node]),
    x: 0,
    y: 0,
  };
}

/** @param {string} key @param {MeshNode[]} members @returns {Box} */
function groupBox(key, members) {
  const tally = counts(members);
  const trouble = [tally.behind && `${tally.behind} behind`, tally.offline && `${tally.offline} offline`]
    .filter(Boolean)
    .join(' · ');
  return {
    id: `group:${key}`,
    kind: 'group',
    title: `${members.length} nodes`,
    lines: [key, trouble || 'all up to date'],
    members: [...members].sort((a, b) => a.node.localeCompare(b.node)),
    ...tally,
    x: 0,
    y: 0,
  };
}

/** @param {MeshNode[]} members */
function counts(members) {
  return {
    behind: members.filter((n) => n.behind).length,
    offline: members.filter((n) => n.presence === 'offline').length,
    lagging: members.filter(isLagging).length,
    failed: members.filter((n) => n.reportState === 'failed').length,
    unhealthy: members.filter((n) => n.health?.state === 'unhealthy').length,
  };
}

/**
 * One line per pair of boxes and kind; grouped lines count their relations.
 * @param {readonly MeshEdge[]} edges
 * @param {Map<string, string>} boxOf
 * @param {boolean} grouped
 * @returns {Line[]}
 */
function linesOf(edges, boxOf, grouped) {
  /** @type {Map<string, Line>} */
  const lines = new Map();
  for (const edge of edges) {
    const from = boxOf.get(edge.consumer.node);
    const to = boxOf.get(edge.provider.node);
    if (!from || !to) continue;
    const modules = `${edge.consumer.module} → ${edge.provider.module}`;
    const id = grouped ? `${from}>${to}>${edge.kind}` : `${from}>${to}>${modules}`;
    const line = lines.get(id);
    if (line) {
      line.count += 1;
      line.pending ||= !edge.minted;
      line.label = `${edge.kind} ×${line.count}`;
    } else {
      const label = grouped ? edge.kind : `${modules} (${edge.kind})`;
      lines.set(id, {
        id,
        from,
        to,
        kind: edge.kind,
        count: 1,
        pending: !edge.minted,
        label,
        path: '',
        labelX: 0,
        labelY: 0,
      });
    }
  }
  return [...lines.values()];
}

/**
 * Layers by the longest chain of providers below each box (a provider that consumes nothing is
 * layer 0, on the right), ordered within a layer by where their providers are, wrapped into
 * columns so a wide layer stays on screen. Boxes with no relations take the last column. A cycle
 * of relations is cut where its chain reaches the number of boxes.
 * @param {Box[]} boxes
 * @param {Line[]} lines
 */
function place(boxes, lines) {
  const index = new Map(boxes.map((box, i) => [box.id, i]));
  const forward = lines
    .filter((line) => line.from !== line.to)
    .map((line) => [index.get(line.from) ?? 0, index.get(line.to) ?? 0]);
  const depth = boxes.map(() => 0);
  for (let round = 0; round < boxes.length; round += 1) {
    let changed = false;
    for (const [from, to] of forward) {
      const wanted = (depth[to] ?? 0) + 1;
      if ((depth[from] ?? 0) < wanted && wanted <= boxes.length) {
        depth[from] = wanted;
        changed = true;
      }
    }
    if (!changed) break;
  }
  const related = new Set(lines.flatMap((line) => [line.from, line.to]));
  /** @type {Map<number, Box[]>} */
  const layers = new Map();
  boxes.forEach((box, i) => {
    const layer = related.has(box.id) ? (depth[i] ?? 0) : -1;
    layers.set(layer, [...(layers.get(layer) ?? []), box]);
  });
  const order = new Map();
  const targets = new Map(boxes.map((box) => [box.id, /** @type {string[]} */ ([])]));
  for (const line of lines) if (line.from !== line.to) targets.get(line.from)?.push(line.to);
  const depths = [...layers.keys()].filter((d) => d >= 0).sort((a, b) => a - b);
  for (const d of depths) {
    const layer = layers.get(d) ?? [];
    const weight = (/** @type {Box} */ box) => {
      const known = (targets.get(box.id) ?? []).map((id) => order.get(id)).filter((o) => o !== undefined);
      return known.length ? known.reduce((a, b) => a + b, 0) / known.length : Number.POSITIVE_INFINITY;
    };
    layer.sort((a, b) => weight(a) - weight(b) || a.title.localeCompare(b.title) || a.id.localeCompare(b.id));
    layer.forEach((box, i) => {
      order.set(box.id, i);
    });
  }
  layers.get(-1)?.sort((a, b) => a.id.localeCompare(b.id));
  const columns = [...depths.reverse(), ...(layers.has(-1) ? [-1] : [])].map((d) => layers.get(d) ?? []);
  const maxRows = Math.max(6, Math.ceil(Math.sqrt(boxes.length * 1.6)));
  const tallest = Math.min(maxRows, Math.max(1, ...columns.map((c) => c.length)));
  let x = 0;
  for (const layer of columns) {
    const rows = Math.min(maxRows, layer.length);
    const top = ((tallest - rows) * (boxHeight + rowGap)) / 2;
    layer.forEach((box, i) => {
      box.x = x + Math.floor(i / rows) * (boxWidth + columnGap);
      box.y = top + (i % rows) * (boxHeight + rowGap);
    });
    x += Math.ceil(layer.length / rows) * (boxWidth + columnGap) - columnGap + layerGap;
  }
  const byId = new Map(boxes.map((box) => [box.id, box]));
  const leaving = new Map();
  for (const line of lines) {
    // Lines leaving one box put their labels at different places along them, so they do not overlap.
    const k = leaving.get(line.from) ?? 0;
    leaving.set(line.from, k + 1);
    route(line, byId.get(line.from), byId.get(line.to), 0.25 + 0.2 * (k % 3));
  }
  return { width: Math.max(boxWidth, x - layerGap), height: tallest * (boxHeight + rowGap) - rowGap };
}

/**
 * A cubic curve from the consumer's right side to the provider's left side; a relation back to
 * the left bends below both boxes; one within a box loops on its right. Its label sits at
 * `labelAt` along it, before the lines into one provider meet.
 * @param {Line} line @param {Box | undefined} from @param {Box | undefined} to @param {number} labelAt
 */
function route(line, from, to, labelAt) {
  if (!from || !to) return;
  const x1 = from.x + boxWidth;
  const y1 = from.y + boxHeight / 2;
  if (from === to) {
    line.path = `M ${x1} ${y1 - 12} C ${x1 + 46} ${y1 - 40}, ${x1 + 46} ${y1 + 40}, ${x1} ${y1 + 12}`;
    line.labelX = x1 + 36;
    line.labelY = y1;
    return;
  }
  const x2 = to.x;
  const y2 = to.y + boxHeight / 2;
  const forwardReach = Math.max(30, (x2 - x1) * 0.45);
  const bend = x2 > x1 ? 0 : boxHeight * 1.6;
  const c1 = [x1 + (x2 > x1 ? forwardReach : 60), y1 + bend];
  const c2 = [x2 - (x2 > x1 ? forwardReach : 60), y2 + bend];
  line.path = `M ${x1} ${y1} C ${c1[0]} ${c1[1]}, ${c2[0]} ${c2[1]}, ${x2} ${y2}`;
  const at = (
    /** @type {number} */ p0,
    /** @type {number} */ p1,
    /** @type {number} */ p2,
    /** @type {number} */ p3,
  ) =>
    (1 - labelAt) ** 3 * p0 +
    3 * (1 - labelAt) ** 2 * labelAt * p1 +
    3 * (1 - labelAt) * labelAt ** 2 * p2 +
    labelAt ** 3 * p3;
  line.labelX = at(x1, c1[0] ?? 0, c2[0] ?? 0, x2);
  line.labelY = at(y1, c1[1] ?? 0, c2[1] ?? 0, y2);
}
