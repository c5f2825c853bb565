import type { HttpMethod, Route } from './table.ts';

export type RouteMatch = { readonly route: Route; readonly pathParameters: Record<string, string> };

/** A path's segments as sent: `/nodes//x/` has four, two of them empty, and matches no route of two. */
const segmentsOf = (path: string) => (path.startsWith('/') ? path.slice(1) : path).split('/');

/**
 * Matches a concrete path against the table: exact segments first, as API Gateway does. The path
 * is taken as sent: an empty segment is one (it matches no route), never dropped.
 */
export function matchRoute(
  table: readonly Route[],
  method: string,
  path: string,
): RouteMatch | { readonly allowed: HttpMethod[] } | undefined {
  const segments = segmentsOf(path);
  const candidates: RouteMatch[] = [];
  for (const route of table) {
    const pattern = segmentsOf(route.path);
    if (pattern.length !== segments.length) continue;
    const pathParameters: Record<string, string> = {};
    const fits = pattern.every((part, index) => {
      const actual = segments[index] as string;
      const parameter = /^\{(\w+)\}$/.exec(part);
      if (parameter) {
        if (actual === '') return false;
        pathParameters[parameter[1] as string] = decodeURIComponent(actual);
        return true;
      }
      return part === actual;
    });
    if (fits) candidates.push({ route, pathParameters });
  }
  if (candidates.length === 0) return undefined;
  const literalCount = (match: RouteMatch) =>
    match.route.path.split('/').filter((p) => p && !p.startsWith('{')).length;
  candidates.sort((a, b) => literalCount(b) - literalCount(a));
  const best = literalCount(candidates[0] as RouteMatch);
  const sameShape = candidates.filter((candidate) => literalCount(candidate) === best);
  const exact = sameShape.find((candidate) => candidate.route.method === method);
  return exact ?? { allowed: sameShape.map((candidate) => candidate.route.method) };
}
