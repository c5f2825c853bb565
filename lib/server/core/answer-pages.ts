/**
 * Answers that are one document, not a list of nodes (the export's text, a plan), cut into
 * pages of at most a byte budget, so that no answer is over 1 MB (docs/http-api.md, "Pages and
 * filters"). Each page is computed from the whole document at the place its cursor names; the
 * pages joined give the document unpaged, byte for byte.
 */

/**
 * No answer is larger than this (JSON bytes of its entries, the envelope a few bytes more): a
 * page is cut short before the node that would pass it, so one unusually large node never makes
 * an answer near API Gateway's 10 MB or Lambda's 6 MB.
 */
export const pageBytes = 1000 * 1024;

/** JSON bytes of a value, as an answer would hold it. */
export const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value));

/** JSON bytes of one string inside an answer, quotes left out: what it costs once escaped. */
const escapedBytes = (text: string) => jsonBytes(text) - 2;

/**
 * The part of `text` from `start` whose escaped bytes fit `budget`, cut after a line (or,
 * when one line alone is over the budget, inside it, never inside a UTF-16 pair), and where the
 * next page starts: null at the end. A page always holds something, so paging always ends.
 */
export function pageOfText(
  text: string,
  start: number,
  budget: number,
): { readonly chunk: string; readonly next: number | null } {
  let end = start;
  let bytes = 0;
  while (end < text.length) {
    const newline = text.indexOf('\n', end);
    const lineEnd = newline === -1 ? text.length : newline + 1;
    const cost = escapedBytes(text.slice(end, lineEnd));
    if (bytes + cost > budget) break;
    bytes += cost;
    end = lineEnd;
  }
  if (end === start && start < text.length) end = cutInside(text, start, budget);
  return { chunk: text.slice(start, end), next: end < text.length ? end : null };
}

/** The end of the longest piece of one line from `start` that fits: at least one character. */
function cutInside(text: string, start: number, budget: number): number {
  let end = start;
  let bytes = 0;
  while (end < text.length) {
    const code = text.charCodeAt(end);
    const width = code >= 0xd800 && code <= 0xdbff ? 2 : 1;
    const cost = escapedBytes(text.slice(end, end + width));
    if (end > start && bytes + cost > budget) break;
    bytes += cost;
    end += width;
  }
  return end;
}

/** Where a list sits in a document: the keys from its root. */
export type ListPath = readonly string[];

type Doc = object;

export const listAt = (doc: Doc, path: ListPath): readonly unknown[] => {
  let value: unknown = doc;
  for (const key of path) value = (value as Record<string, unknown> | undefined)?.[key];
  if (!Array.isArray(value)) throw new Error(`no list at ${path.join('.')}`);
  return value;
};

/** The document with the list at `path` replaced (copying only the maps on the way). */
export function withList<T extends object>(doc: T, path: ListPath, list: readonly unknown[]): T {
  const [key, ...rest] = path;
  if (key === undefined) return doc;
  const inner = (doc as Record<string, object>)[key] as object;
  const value = rest.length === 0 ? list : withList(inner, rest, list);
  // a list of documents each with its own list (a rollout's waves) stays a list
  if (Array.isArray(doc)) return Object.assign([...doc], { [key]: value }) as T;
  return { ...doc, [key]: value };
}

/**
 * One page of a document whose size is in its lists: every field that is not one of `paths` on
 * every page, and the lists' items taken in the order of `paths` from item `start` (counted
 * through all the lists, one after another) while the page's JSON fits `budget`; the lists'
 * other items left out of this page (empty). `next` is the item the next page starts at, null
 * at the end; `total` the items of all the lists. A page always holds an item when one is left, so paging always ends.
 */
export function pageOfLists<T extends object>(
  doc: T,
  paths: readonly ListPath[],
  start: number,
  budget: number,
): { readonly page: T; readonly next: number | null; readonly total: number } {
  const lists = paths.map((path) => listAt(doc, path));
  let page = paths.reduce((shell, path) => withList(shell, path, []), doc as Doc);
  let bytes = jsonBytes(page);
  const total = lists.reduce((sum, list) => sum + list.length, 0);
  const taken: unknown[][] = paths.map(() => []);
  let at = start;
  let offset = 0;
  for (const [index, list] of lists.entries()) {
    const from = Math.max(0, at - offset);
    for (let item = from; item < list.length; item += 1) {
      // An item costs its JSON and the comma before it.
      const cost = jsonBytes(list[item]) + 1;
      if (at > start && bytes + cost > budget) return done();
      bytes += cost;
      taken[index]?.push(list[item]);
      at += 1;
    }
    offset += list.length;
  }
  return done();

  function done() {
    paths.forEach((path, index) => {
      page = withList(page, path, taken[index] ?? []);
    });
    return { page: page as T, next: at < total ? at : null, total };
  }
}

/** The pages of `pageOfLists` joined: the first page's other fields, every list's items in order. */
export function joinListPages<T extends object>(pages: readonly T[], paths: readonly ListPath[]): T {
  const [first] = pages;
  if (first === undefined) throw new Error('no pages to join');
  return paths.reduce(
    (doc, path) =>
      withList(
        doc,
        path,
        pages.flatMap((page) => listAt(page, path)),
      ),
    first as Doc,
  ) as T;
}
