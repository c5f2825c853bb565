import { mayCall, type OperatorRole, operatorRoles, rolePolicyNames } from '../core/roles.ts';
import { matchRoute } from './routes.ts';
import type { Route } from './table.ts';

/** The operator routes a role may call: its own and those of the roles before it. */
export const routesOfRole = (routes: readonly Route[], holder: OperatorRole): Route[] =>
  routes.filter((route) => route.auth === 'operator' && route.role && mayCall(holder, route.role));

/**
 * Every route whose role is missing or misplaced: the role rule is total, so a new operator row
 * without one is refused (by the type, by test/unit/roles.test.ts and by the stack's roles)
 * rather than left to no policy or to all of them.
 */
export function roleProblems(routes: readonly Route[]): string[] {
  return routes.flatMap((route) => {
    const key = `${route.method} ${route.path} (${route.handler})`;
    if (route.auth !== 'operator')
      return route.role ? [`${key} is a ${route.auth} route and names the role ${route.role}`] : [];
    if (!route.role) return [`${key} is an operator route and names no role`];
    return operatorRoles.includes(route.role) ? [] : [`${key} names ${route.role}, which is not a role`];
  });
}

/** A route's path as it stands in its execute-api ARN: each `{parameter}` a `*`. */
export const arnPathOf = (path: string): string => path.replace(/\{\w+\}/g, '*');

/**
 * Whether an execute-api ARN path (`/nodes/*`, where IAM's `*` matches any characters, `/`
 * included) matches some request of a route (`/nodes/{node}/token`, where API Gateway gives a
 * parameter one segment: one or more characters, no `/`). Both are regular, so this walks both
 * at once: does any string satisfy the two?
 */
export function arnPathReaches(arnPath: string, routePath: string): boolean {
  const pattern = [...arnPath];
  // A parameter is one character that is not `/` ('one'), then any number more ('more').
  type Token =
    | { readonly kind: 'char'; readonly char: string }
    | { readonly kind: 'one' | 'more'; readonly char?: never };
  const route: Token[] = routePath
    .split(/(\{\w+\})/)
    .flatMap((part): Token[] =>
      /^\{\w+\}$/.test(part)
        ? [{ kind: 'one' }, { kind: 'more' }]
        : [...part].map((char) => ({ kind: 'char', char })),
    );
  const seen = new Map<string, boolean>();
  const walk = (i: number, j: number): boolean => {
    const key = `${i},${j}`;
    const known = seen.get(key);
    if (known !== undefined) return known;
    const star = pattern[i] === '*';
    const token = route[j];
    let result: boolean;
    if (i === pattern.length && j === route.length) result = true;
    else if (star && token?.kind === 'more') result = walk(i + 1, j) || walk(i, j + 1);
    else if (star) result = walk(i + 1, j) || (token !== undefined && walk(i, j + 1));
    else if (token?.kind === 'more')
      result = walk(i, j + 1) || (i < pattern.length && pattern[i] !== '/' && walk(i + 1, j));
    else if (i === pattern.length || token === undefined) result = false;
    else if (token.kind === 'one') result = pattern[i] !== '/' && walk(i + 1, j + 1);
    else result = pattern[i] === token.char && walk(i + 1, j + 1);
    seen.set(key, result);
    return result;
  };
  return walk(0, 0);
}

/**
 * Each ARN of a role's routes that would also let it call a route it may not (a `*` reaches the
 * segments after it): such a route would need its path changed, since IAM has no "one segment".
 */
export function wildcardProblems(routes: readonly Route[]): string[] {
  return operatorRoles.flatMap((holder) => {
    const own = routesOfRole(routes, holder);
    const beyond = routes.filter((route) => route.auth === 'operator' && !own.includes(route));
    return own.flatMap((route) =>
      beyond
        .filter((other) => other.method === route.method && arnPathReaches(arnPathOf(route.path), other.path))
        .map(
          (other) =>
            `${rolePolicyNames[holder]}'s ${route.method} ${arnPathOf(route.path)} would also reach ${other.method} ${other.path}, which needs ${rolePolicyNames[other.role as OperatorRole]}`,
        ),
    );
  });
}

/** The role the route of a request needs, and the route, when the request is one of an operator route. */
export function roleNeeded(
  routes: readonly Route[],
  method: string,
  path: string,
): { readonly role: OperatorRole; readonly route: string } | undefined {
  const match = matchRoute(routes, method, path.split('?')[0] ?? path);
  if (!match || !('route' in match) || match.route.auth !== 'operator' || !match.route.role) return undefined;
  return { role: match.route.role, route: `${match.route.method} ${match.route.path}` };
}
