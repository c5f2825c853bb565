import { controlRoutes } from './routes/control.ts';
import { enrolmentRoutes } from './routes/enrolment.ts';
import { meshRoutes } from './routes/mesh.ts';

/**
 * Every HTTP route of Mesh, in one table read by both the local HTTP server and the CDK API
 * construct, so the two cannot serve different APIs. `handler` names a file in functions/.
 *
 * auth:
 * - operator: SigV4 (IAM) on API Gateway; open on the local runtime, which only listens on loopback
 * - host: a proof-of-possession signature by the node's enrolled key, checked in the handler
 * - token: the one-time enrolment token in the body, throttled on API Gateway
 * - none: no authentication (health)
 */
export type RouteAuth = 'operator' | 'host' | 'token' | 'none';
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

export type Route = {
  readonly method: HttpMethod;
  /** API Gateway resource path; `{name}` segments become path parameters. */
  readonly path: string;
  readonly handler: string;
  readonly auth: RouteAuth;
};

export const routes: readonly Route[] = [
  { method: 'GET', path: '/health', handler: 'health', auth: 'none' },
  ...meshRoutes,
  ...enrolmentRoutes,
  ...controlRoutes,
];

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
