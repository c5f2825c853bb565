import { createHash } from 'node:crypto';

/**
 * Canonical JSON: keys sorted, undefined dropped, no whitespace. Two declarations that mean the
 * same thing give the same bytes, so key order or an omitted default never makes a node
 * falsely behind.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((item) => (item === undefined ? null : sortKeys(item)));
  if (value !== null && typeof value === 'object') {
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const inner = (value as Record<string, unknown>)[key];
      if (inner !== undefined) sorted[key] = sortKeys(inner);
    }
    return sorted;
  }
  return value;
}

/** SHA-256 hex of the canonical JSON. */
export function digestOf(canonical: string): string {
  return createHash('sha256').update(canonical).digest('hex');
}

/** Orders texts by their code units, as `Array.prototype.sort` does: the same on every machine and locale. */
export const compareText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
