import type { HttpMethod, Route } from '../functions.ts';

export type RouteMatch = { readonly route: Route; readonly pathParameters: Record<string, string> };

/** Matches a concrete path against the table: exact segments first, as API Gateway does. */
export function matchRoute(
  table: readonly Route[],
  method: string,
  path: string,
): RouteMatch | { readonly allowed: HttpMethod[] } | undefined {
  const segments = path.split('/').filter(Boolean);
  const candidates: RouteMatch[] = [];
  for (const route of table) {
    const pattern = route.path.split('/').filter(Boolean);
    if (pattern.length !== segments.length) continue;
    const pathParameters: Record<string, string> = {};
    const fits = pattern.every((part, index) => {
      const actual = segments[index] as string;
      const parameter = /^\{(\w+)\}$/.exec(part);
      if (parameter) {
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
