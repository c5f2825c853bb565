// @ts-check
import { svg } from './dom.js';
import { boxHeight, boxWidth } from './layout.js';

/**
 * @typedef {import('./layout.js').Box} Box
 * @typedef {import('./layout.js').Line} Line
 * @typedef {ReturnType<typeof import('./layout.js').arrange>} Arranged
 */

/**
 * Up to this many lines each is labelled with its kind; past it only the selected box's lines
 * are. The selected box's lines always say which modules they join; every line says it on hover.
 */
const labelledUpTo = 60;
const margin = 40;

/**
 * The mesh drawn as SVG: one focusable element per box (a node or a group), a curve per
 * relation, pan by dragging, zoom with the wheel or the buttons. Each refresh redraws the
 * content and keeps the view, unless the boxes themselves changed.
 */
export class GraphView {
  /** @param {HTMLElement} container @param {{ onSelect: (box: Box) => void }} options */
  constructor(container, options) {
    this.onSelect = options.onSelect;
    this.view = { k: 1, x: 0, y: 0 };
    this.size = { width: 1, height: 1 };
    /** @type {string | null} */
    this.selected = null;
    this.layoutKey = '';
    /** @type {Line[]} */
    this.lines = [];
    this.labelled = true;
    this.root = /** @type {SVGSVGElement} */ (
      svg('svg', { id: 'graph-svg', role: 'group', 'aria-label': 'the mesh' })
    );
    this.root.append(
      svg(
        'defs',
        {},
        svg(
          'marker',
          {
            id: 'arrow',
            viewBox: '0 0 10 10',
            refX: 9,
            refY: 5,
            markerWidth: 7,
            markerHeight: 7,
            orient: 'auto-start-reverse',
          },
          svg('path', { d: 'M 0 0 L 10 5 L 0 10 z', fill: '#8da2b5' }),
        ),
      ),
    );
    this.viewport = svg('g', { class: 'viewport' });
    this.root.append(this.viewport);
    container.prepend(this.root);
    this.#listen();
  }

  /** @param {Arranged} arranged */
  render(arranged) {
    const key = arranged.boxes.map((box) => `${box.id}@${box.x},${box.y}`).join('|');
    const moved = key !== this.layoutKey;
    this.layoutKey = key;
    this.size = { width: arranged.width, height: arranged.height };
    this.lines = arranged.lines;
    const edges = svg('g', { class: 'edges' });
    const labels = svg('g', { class: 'edge-labels' });
    this.labelled = arranged.lines.length <= labelledUpTo;
    for (const line of arranged.lines) {
      edges.append(
        svg(
          'path',
          {
            class: `edge${line.pending ? ' pending' : ''}`,
            d: line.path,
            'marker-end': 'url(#arrow)',
            'data-line': line.id,
          },
          svg('title', {}, line.label),
        ),
      );
      labels.append(
        svg('text', {
          class: 'edge-label',
          x: line.labelX,
          y: line.labelY - 3,
          'text-anchor': 'middle',
          'data-line': line.id,
        }),
      );
    }
    const boxes = svg('g', { class: 'boxes' });
    for (const box of arranged.boxes) boxes.append(this.#box(box));
    this.viewport.replaceChildren(edges, labels, boxes);
    this.#highlight();
    if (moved) this.fit();
  }

  /** @param {Box} box */
  #box(box) {
    const classes = ['box', box.kind];
    if (box.behind) classes.push('behind');
    if (box.offline && box.offline === box.members.length) classes.push('offline');
    if (box.lagging) classes.push('lagging');
    if (box.failed) classes.push('failed');
    if (box.unhealthy) classes.push('unhealthy');
    const node = box.kind === 'node' ? box.members[0] : undefined;
    // A group's second line already says how many are behind or offline.
    const state = node
      ? [
          node.behind ? 'behind' : node.enrolled ? 'up to date' : 'never enrolled',
          node.heldBack ? 'held back' : (node.presence ?? ''),
        ]
      : [];
    return svg(
      'g',
      {
        class: classes.join(' '),
        transform: `translate(${box.x},${box.y})`,
        tabindex: 0,
        role: 'button',
        'data-box': box.id,
        ...(node ? { 'data-node': node.node } : { 'data-group': box.lines[0] ?? '' }),
        'aria-label': [`${box.title}: ${box.lines.join('; ')}`, ...state.filter(Boolean)].join('; '),
        onclick: () => this.#choose(box),
        onkeydown: (/** @type {Event} */ event) => {
          const key = /** @type {KeyboardEvent} */ (event).key;
          if (key === 'Enter' || key === ' ') this.#choose(box);
        },
      },
      svg('rect', { width: boxWidth, height: boxHeight, rx: 6 }),
      svg(
        'text',
        { class: 'name', x: 8, y: 16 },
        clip(box.title + (box.behind && node ? '  BEHIND' : ''), 26),
      ),
      svg('text', { class: 'sub', x: 8, y: 31 }, clip(box.lines[0] ?? '', 28)),
      svg('text', { class: 'rev', x: 8, y: 46 }, clip(box.lines[1] ?? '', 28)),
      svg('title', {}, [box.title, ...box.lines].join('\n')),
    );
  }

  /** @param {Box} box */
  #choose(box) {
    this.selected = box.id;
    this.#highlight();
    this.onSelect(box);
  }

  /** @param {string | null} id */
  select(id) {
    this.selected = id;
    this.#highlight();
  }

  #highlight() {
    for (const element of this.viewport.querySelectorAll('.box')) {
      element.classList.toggle('selected', element.getAttribute('data-box') === this.selected);
    }
    const related = new Set(
      this.lines.filter((l) => l.from === this.selected || l.to === this.selected).map((l) => l.id),
    );
    for (const element of this.viewport.querySelectorAll('.edge')) {
      element.classList.toggle('related', related.has(element.getAttribute('data-line') ?? ''));
    }
    const byId = new Map(this.lines.map((line) => [line.id, line]));
    for (const element of this.viewport.querySelectorAll('.edge-label')) {
      const line = byId.get(element.getAttribute('data-line') ?? '');
      if (!line) continue;
      const short = line.count > 1 ? line.label : line.kind;
      element.textContent = related.has(line.id) ? line.label : this.labelled ? short : '';
    }
  }

  fit() {
    const { width, height } = this.root.getBoundingClientRect();
    if (width === 0 || height === 0) return;
    const k = Math.min(width / (this.size.width + 2 * margin), height / (this.size.height + 2 * margin), 1.4);
    this.view = { k, x: (width - this.size.width * k) / 2, y: (height - this.size.height * k) / 2 };
    this.#apply();
  }

  /** @param {number} factor @param {number} [atX] @param {number} [atY] */
  zoomBy(factor, atX, atY) {
    const { width, height } = this.root.getBoundingClientRect();
    const cx = atX ?? width / 2;
    const cy = atY ?? height / 2;
    const k = Math.min(4, Math.max(0.05, this.view.k * factor));
    const ratio = k / this.view.k;
    this.view = { k, x: cx - (cx - this.view.x) * ratio, y: cy - (cy - this.view.y) * ratio };
    this.#apply();
  }

  #apply() {
    this.viewport.setAttribute('transform', `translate(${this.view.x},${this.view.y}) scale(${this.view.k})`);
  }

  #listen() {
    /** @type {{ x: number, y: number } | null} */
    let drag = null;
    this.root.addEventListener('pointerdown', (event) => {
      if (/** @type {Element} */ (event.target).closest('.box')) return;
      drag = { x: event.clientX, y: event.clientY };
      this.root.setPointerCapture(event.pointerId);
      this.root.classList.add('panning');
    });
    this.root.addEventListener('pointermove', (event) => {
      if (!drag) return;
      this.view = {
        ...this.view,
        x: this.view.x + event.clientX - drag.x,
        y: this.view.y + event.clientY - drag.y,
      };
      drag = { x: event.clientX, y: event.clientY };
      this.#apply();
    });
    const stop = () => {
      drag = null;
      this.root.classList.remove('panning');
    };
    this.root.addEventListener('pointerup', stop);
    this.root.addEventListener('pointercancel', stop);
    this.root.addEventListener(
      'wheel',
      (event) => {
        event.preventDefault();
        const bounds = this.root.getBoundingClientRect();
        this.zoomBy(
          Math.exp(-event.deltaY * 0.0015),
          event.clientX - bounds.left,
          event.clientY - bounds.top,
        );
      },
      { passive: false },
    );
  }
}

/** @param {string} text @param {number} length */
const clip = (text, length) => (text.length > length ? `${text.slice(0, length - 1)}…` : text);
