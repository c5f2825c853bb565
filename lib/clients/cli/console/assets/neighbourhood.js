// @ts-check
import { svg } from './dom.js';
import { stateOf } from './fleet-view.js';

/**
 * A node's neighbourhood (docs/console.md, "A node's neighbourhood"): its consumers on the left,
 * its providers on the right, and with two hops their consumers and providers beyond them, and
 * under it the other consumers of its providers and providers of its consumers, in columns, so an arrow only ever joins two neighbouring columns and none crosses a box. Drawn at
 * its own size (text 11 to 13 px), scrolled, never scaled down.
 *
 * @typedef {import('../../../../server/core/views/views.ts').NodeDetails} NodeDetails
 * @typedef {import('../../../../server/core/views/views.ts').MeshEdge} MeshEdge
 * @typedef {{ node: string, details: NodeDetails | null }} Member
 */

/** Boxes a column shows before it says how many more. */
export const columnNodes = 12;
/** Neighbours whose own neighbours a second hop reads (one read each). */
export const secondHopReads = 16;

const boxWidth = 230;
const boxHeight = 46;
const columnGap = 110;
const rowGap = 14;
const margin = 16;

/**
 * The neighbours to read for a second hop: the center's providers and consumers, at most
 * `secondHopReads`, providers first.
 * @param {NodeDetails} center
 */
export function secondHopOf(center) {
  const providers = [...new Set(center.consumes.map((e) => e.provider.node))].filter(
    (n) => n !== center.node,
  );
  const consumers = [...new Set(center.consumedBy.map((e) => e.consumer.node))].filter(
    (n) => n !== center.node,
  );
  return [...providers, ...consumers].slice(0, secondHopReads);
}

/**
 * The columns: consumers' consumers, consumers, the node, providers, providers' providers.
 * @param {NodeDetails} center @param {ReadonlyMap<string, NodeDetails>} around the neighbours read for a second hop
 */
export function columnsOf(center, around) {
  const names = (/** @type {readonly MeshEdge[]} */ edges, /** @type {'consumer' | 'provider'} */ side) =>
    [...new Set(edges.map((e) => e[side].node))].sort();
  const providers = names(center.consumes, 'provider').filter((n) => n !== center.node);
  const consumers = names(center.consumedBy, 'consumer').filter((n) => n !== center.node);
  const placed = new Set([center.node, ...providers, ...consumers]);
  const beyond = (/** @type {string[]} */ from, /** @type {'consumes' | 'consumedBy'} */ way) => {
    const found = new Set();
    for (const name of from) {
      const d = around.get(name);
      if (!d) continue;
      for (const e of d[way]) {
        const other = way === 'consumes' ? e.provider.node : e.consumer.node;
        if (!placed.has(other)) found.add(other);
      }
    }
    const sorted = /** @type {string[]} */ ([...found].sort());
    for (const n of sorted) placed.add(n);
    return sorted;
  };
  const farProviders = beyond(providers, 'consumes');
  const farConsumers = beyond(consumers, 'consumedBy');
  // Who else consumes from its providers, and what else its consumers consume: beside it, so
  // their arrows run the same way as its own.
  const siblings = [...beyond(providers, 'consumedBy'), ...beyond(consumers, 'consumes')].sort();
  /** @type {MeshEdge[]} */
  const edges = [...center.consumes, ...center.consumedBy];
  for (const name of [...providers, ...consumers]) {
    const d = around.get(name);
    if (d) edges.push(...d.consumes, ...d.consumedBy);
  }
  return { columns: [farConsumers, consumers, [center.node, ...siblings], providers, farProviders], edges };
}

/**
 * The drawing: one box a node (a button: Enter or a click shows that node), one arrow a
 * relation between shown nodes, consumer → provider, labelled with its kind.
 * @param {NodeDetails} center @param {ReadonlyMap<string, NodeDetails>} around
 * @param {(node: string) => void} onNode
 */
export function neighbourhoodSvg(center, around, onNode) {
  const { columns, edges } = columnsOf(center, around);
  const used = columns.map((c, i) => ({ names: c, index: i })).filter((c) => c.names.length > 0);
  const rows = Math.max(...used.map((c) => Math.min(c.names.length, columnNodes + 1)));
  const width = margin * 2 + used.length * boxWidth + (used.length - 1) * columnGap;
  const height = margin * 2 + rows * boxHeight + (rows - 1) * rowGap;
  /** @type {Map<string, { x: number, y: number }>} */
  const at = new Map();
  /** @type {SVGElement[]} */
  const boxes = [];
  used.forEach((column, c) => {
    const x = margin + c * (boxWidth + columnGap);
    const shown = column.names.slice(0, columnNodes);
    const top = margin + ((rows - Math.min(column.names.length, columnNodes + 1)) * (boxHeight + rowGap)) / 2;
    shown.forEach((name, r) => {
      const y = top + r * (boxHeight + rowGap);
      at.set(name, { x, y });
      boxes.push(
        boxOf(
          name,
          name === center.node ? center : (around.get(name) ?? null),
          relationText(name, edges),
          { x, y, isCenter: name === center.node },
          onNode,
        ),
      );
    });
    if (column.names.length > columnNodes) {
      const y = top + columnNodes * (boxHeight + rowGap);
      boxes.push(
        svg(
          'g',
          { class: 'hood-more', transform: `translate(${x},${y})` },
          svg('rect', { width: boxWidth, height: boxHeight, rx: 6 }),
          svg('text', { x: 10, y: 27, class: 'sub' }, `and ${column.names.length - columnNodes} more`),
        ),
      );
    }
  });
  /** @type {MeshEdge[]} */
  const drawn = [];
  const seen = new Set();
  for (const e of edges) {
    const from = at.get(e.consumer.node);
    const to = at.get(e.provider.node);
    const key = `${e.consumer.node}>${e.provider.node}:${e.kind}`;
    if (!from || !to || seen.has(key) || from.x >= to.x) continue;
    seen.add(key);
    drawn.push(e);
  }
  // Each box's arrows leave and arrive spread along its side, in the order of the boxes they
  // join, so a node many consume from is not one blot of arrowheads.
  const spread = (
    /** @type {'consumer' | 'provider'} */ side,
    /** @type {'consumer' | 'provider'} */ other,
  ) => {
    /** @type {Map<MeshEdge, number>} */
    const y = new Map();
    /** @type {Map<string, MeshEdge[]>} */
    const bySide = new Map();
    for (const e of drawn) bySide.set(e[side].node, [...(bySide.get(e[side].node) ?? []), e]);
    for (const [node, list] of bySide) {
      const top = at.get(node)?.y ?? 0;
      list.sort((a, b) => (at.get(a[other].node)?.y ?? 0) - (at.get(b[other].node)?.y ?? 0));
      list.forEach((e, i) => {
        y.set(e, top + 6 + ((boxHeight - 12) * (i + 1)) / (list.length + 1));
      });
    }
    return y;
  };
  /** @type {(side: 'consumer' | 'provider') => Map<string, number>} */
  const degree = (side) => {
    const counts = new Map();
    for (const e of drawn) counts.set(e[side].node, (counts.get(e[side].node) ?? 0) + 1);
    return counts;
  };
  const leaving = degree('consumer');
  const arriving = degree('provider');
  const leave = spread('consumer', 'provider');
  const arrive = spread('provider', 'consumer');
  const arrows = [];
  for (const e of drawn) {
    const from = /** @type {{ x: number, y: number }} */ (at.get(e.consumer.node));
    const to = /** @type {{ x: number, y: number }} */ (at.get(e.provider.node));
    const x1 = from.x + boxWidth;
    const y1 = leave.get(e) ?? from.y + boxHeight / 2;
    const x2 = to.x;
    const y2 = arrive.get(e) ?? to.y + boxHeight / 2;
    const mid = (x1 + x2) / 2;
    arrows.push(
      svg('path', {
        class: `hood-edge${e.minted ? '' : ' pending'}`,
        d: `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}`,
        'marker-end': 'url(#hood-arrow)',
      }),
      // at the end where fewer arrows meet, so labels of a fan stand apart
      (leaving.get(e.consumer.node) ?? 0) <= (arriving.get(e.provider.node) ?? 0)
        ? svg('text', { class: 'hood-kind', x: x1 + 6, y: y1 - 4 }, e.kind)
        : svg('text', { class: 'hood-kind', x: x2 - 10, y: y2 - 4, 'text-anchor': 'end' }, e.kind),
    );
  }
  return svg(
    'svg',
    {
      width,
      height,
      viewBox: `0 0 ${width} ${height}`,
      role: 'img',
      'aria-label': `${center.node}: consumes from ${columns[3]?.length ?? 0}, consumed by ${columns[1]?.length ?? 0}`,
    },
    svg(
      'defs',
      {},
      svg(
        'marker',
        {
          id: 'hood-arrow',
          viewBox: '0 0 10 10',
          refX: 10,
          refY: 5,
          markerWidth: 7,
          markerHeight: 7,
          orient: 'auto',
        },
        svg('path', { d: 'M0,0 L10,5 L0,10 z', class: 'hood-arrow' }),
      ),
    ),
    ...arrows,
    ...boxes,
  );
}

/**
 * What a node not read shows: the modules of its first relation drawn (`web → rabbitmq`).
 * @param {string} name @param {readonly MeshEdge[]} edges
 */
function relationText(name, edges) {
  const e = edges.find((edge) => edge.consumer.node === name || edge.provider.node === name);
  if (!e) return '';
  return `${e.consumer.module} → ${e.provider.module}`;
}

/**
 * @param {string} name @param {NodeDetails | null} d @param {string} relation
 * @param {{ x: number, y: number, isCenter: boolean }} place @param {(node: string) => void} onNode
 */
function boxOf(name, d, relation, { x, y, isCenter }, onNode) {
  const state = d ? stateOf({ ...d, relations: { consumes: 0, consumedBy: 0 } }) : null;
  const modules = d ? d.modules.map((m) => m.module).join(', ') : '';
  // a neighbour not read is known by its relation: its state is one click away
  const sub = d ? [state?.text, modules].filter(Boolean).join(' · ') : relation;
  const shown = sub.length > 34 ? `${sub.slice(0, 33)}…` : sub;
  const label = `${name}${sub ? `: ${sub}` : ''}`;
  const open = () => onNode(name);
  return svg(
    'g',
    {
      class: `hood-node${isCenter ? ' center' : ''}${state ? ` s-${state.state}` : ''}`,
      transform: `translate(${x},${y})`,
      'data-hood': name,
      role: 'button',
      tabindex: 0,
      'aria-label': label,
      onclick: open,
      onkeydown: (/** @type {Event} */ event) => {
        const key = /** @type {KeyboardEvent} */ (event).key;
        if (key === 'Enter' || key === ' ') {
          event.preventDefault();
          open();
        }
      },
    },
    svg('title', {}, label),
    svg('rect', { width: boxWidth, height: boxHeight, rx: 6 }),
    svg('text', { x: 10, y: 19, class: 'name' }, name.length > 28 ? `${name.slice(0, 27)}…` : name),
    svg('text', { x: 10, y: 36, class: 'sub' }, shown),
  );
}
