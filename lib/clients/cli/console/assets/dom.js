// @ts-check
/** Small DOM helpers. Text always goes in as text nodes: names, reasons and bodies are never parsed as HTML. */

/**
 * @param {string} tag
 * @param {Record<string, string | boolean | ((event: Event) => void)>} [attributes]
 * @param {Array<Node | string | null | undefined | false>} children
 * @returns {HTMLElement}
 */
export function el(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  assign(element, attributes);
  append(element, children);
  return element;
}

const svgNamespace = 'http://www.w3.org/2000/svg';

/**
 * @param {string} tag
 * @param {Record<string, string | number | boolean | ((event: Event) => void)>} [attributes]
 * @param {Array<Node | string | null | undefined | false>} children
 * @returns {SVGElement}
 */
export function svg(tag, attributes = {}, ...children) {
  const element = /** @type {SVGElement} */ (document.createElementNS(svgNamespace, tag));
  assign(element, attributes);
  append(element, children);
  return element;
}

/**
 * @param {Element} element
 * @param {Record<string, string | number | boolean | ((event: Event) => void)>} attributes
 */
function assign(element, attributes) {
  for (const [name, value] of Object.entries(attributes)) {
    if (typeof value === 'function') element.addEventListener(name.replace(/^on/, ''), value);
    else if (value === true) element.setAttribute(name, '');
    else if (value !== false) element.setAttribute(name, String(value));
  }
}

/**
 * @param {Element} element
 * @param {Array<Node | string | null | undefined | false>} children
 */
function append(element, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    element.append(typeof child === 'string' ? document.createTextNode(child) : child);
  }
}

/** @param {Element} element @param {Array<Node | string | null | undefined | false>} children */
export function replaceChildren(element, ...children) {
  element.replaceChildren();
  append(element, children);
}

/**
 * "12 s ago", "3 min ago", "5 h ago", "2 d ago"; the exact time goes in a title.
 * @param {string | null | undefined} iso
 * @param {number} nowMs
 */
export function ago(iso, nowMs) {
  if (!iso) return 'never';
  const seconds = Math.max(0, Math.round((nowMs - Date.parse(iso)) / 1000));
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 172_800) return `${Math.round(seconds / 3600)} h ago`;
  return `${Math.round(seconds / 86_400)} d ago`;
}

/**
 * A time as people read it, with the exact ISO time on hover.
 * @param {string | null | undefined} iso
 * @param {number} nowMs
 */
export function when(iso, nowMs) {
  return el('span', { title: iso ?? '' }, ago(iso, nowMs));
}

/** @param {string} text @param {string} [kind] */
export function badge(text, kind = text) {
  return el('span', { class: `badge ${kind}` }, text);
}
