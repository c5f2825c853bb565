import type { LoopbackRefusal } from './loopback-guard.ts';

/** A request's path as sent (percent-encoding kept), its query parsed, and the query as sent (`?…` or ''). */
export type RequestTarget = {
  readonly path: string;
  readonly query: URLSearchParams;
  readonly search: string;
};

const invalidPath = (message: string): LoopbackRefusal => ({ status: 400, code: 'invalid_path', message });

/**
 * The path and query a request names, routed as sent, never resolved: a URL parser would turn
 * `/nodes/web1/../broker` into `/nodes/broker` (and `\` into `/`, `%2e%2e` into `..`), so the
 * request would act on what it does not name. A path with a `.` or `..` segment (encoded or
 * not), a backslash, or an empty segment inside it (`/nodes//token` is not `/nodes/token`) is
 * refused; one trailing `/` is kept as sent, and matches no route. An origin-form target
 * (`/path?query`) is a path whatever it holds; an absolute-form one (`http://host/path`) gives its
 * path and query (its host is the loopback guard's); anything else (`*`) names no path.
 */
export function requestTarget(target: string): RequestTarget | LoopbackRefusal {
  let rest = target;
  if (!target.startsWith('/')) {
    const absolute = /^https?:\/\/[^/?#]*(.*)$/i.exec(target);
    if (!absolute) return invalidPath('the request target is not a path');
    rest = absolute[1] || '/';
  }
  const hash = rest.indexOf('#');
  if (hash >= 0) rest = rest.slice(0, hash);
  const mark = rest.indexOf('?');
  const path = mark < 0 ? rest : rest.slice(0, mark);
  const query = mark < 0 ? '' : rest.slice(mark + 1);
  if (!path.startsWith('/')) return invalidPath('the request target is not a path');
  if (path.includes('\\')) return invalidPath('a path holds no backslash: it is routed as sent');
  const segments = path.split('/').slice(1);
  for (const [index, segment] of segments.entries()) {
    if (segment === '' && index < segments.length - 1)
      return invalidPath(`the path ${JSON.stringify(path)} has an empty segment: it is routed as sent`);
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      return invalidPath('the path is not valid percent-encoding');
    }
    if (decoded === '.' || decoded === '..')
      return invalidPath(
        `the path ${JSON.stringify(path)} has a ${JSON.stringify(decoded)} segment: paths are routed as sent, never resolved`,
      );
  }
  return { path, query: new URLSearchParams(query), search: mark < 0 ? '' : `?${query}` };
}

export const isRefusal = (value: RequestTarget | LoopbackRefusal): value is LoopbackRefusal =>
  'status' in value;
