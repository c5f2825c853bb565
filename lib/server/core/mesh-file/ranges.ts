/**
 * Node patterns: `web-[001-800]` is web-001 … web-800 (zero-padded as its start is), `web-7` is
 * itself, and `rack-[1-4]-node-[01-40]` is every combination. The count is known before any name
 * is made, so a pattern too large is refused without building it.
 */
export type Expansion =
  | { readonly names: string[] }
  | {
      readonly error: string /** Set when the pattern is well-formed but too large. */;
      readonly count?: number;
    };

const dnsLabel = /^[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

type Part = string | { readonly from: number; readonly to: number; readonly width: number };

export function expandPattern(pattern: string, max: number): Expansion {
  const parts: Part[] = [];
  const token = /\[([^\]]*)\]|([^[\]]+)|([[\]])/g;
  for (const [, range, text, stray] of pattern.matchAll(token)) {
    if (stray)
      return { error: `${pattern}: a range is [START-END], and this one has an unmatched "${stray}"` };
    if (text !== undefined) {
      parts.push(text);
      continue;
    }
    const bounds = /^(\d{1,9})-(\d{1,9})$/.exec(range ?? '');
    if (!bounds) return { error: `${pattern}: a range is [START-END] with digits, such as [001-800]` };
    const [, start = '', end = ''] = bounds;
    const from = Number(start);
    const to = Number(end);
    if (from > to) return { error: `${pattern}: the range [${range}] ends before it starts` };
    const width = start.length > 1 && start.startsWith('0') ? start.length : 0;
    if (width > 0 && end.length !== width)
      return { error: `${pattern}: a zero-padded range has the same number of digits at both ends` };
    parts.push({ from, to, width });
  }
  let count = 1;
  for (const part of parts) if (typeof part !== 'string') count *= part.to - part.from + 1;
  if (count > max) return { error: `${pattern} is ${count} nodes, more than ${max}`, count };

  let names = [''];
  for (const part of parts) {
    if (typeof part === 'string') {
      names = names.map((name) => name + part);
      continue;
    }
    const next: string[] = [];
    for (const name of names)
      for (let n = part.from; n <= part.to; n++) next.push(name + String(n).padStart(part.width, '0'));
    names = next;
  }
  const bad = names.find((name) => !dnsLabel.test(name));
  if (bad !== undefined)
    return {
      error: `${pattern} makes ${bad}, which is not a DNS label (a lowercase letter, then up to 62 lowercase letters, digits or hyphens, not ending with a hyphen)`,
    };
  return { names };
}
