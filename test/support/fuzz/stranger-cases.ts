import fc from 'fast-check';
import type { FuzzCase } from './fuzz-cases.ts';

/**
 * What a stranger sends (issue 36): a valid request of the route fuzz (fuzz-cases.ts) made in one
 * way only this machine's own clients never make it, each of which the local server must refuse
 * with its own 4xx, writing nothing (lib/clients/http/loopback-guard.ts, request-target.ts):
 *
 * - `stranger origin`: an `Origin` other than the server's own (another site, `null`, another
 *   port or scheme of this machine);
 * - `stranger host`: a `Host` that is not loopback at the server's port (a rebound name, another
 *   port, no port, a look-alike);
 * - `stranger content-type`: a body sent as a form, as text, or with no type;
 * - `stranger unframed`: the request's bytes as a raw connection writes them: a body after a
 *   request that declared none (the DELETE of the run), a body on a route that takes none, a
 *   chunked body there;
 * - `stranger path`: the path with `..`, `.`, `%2e%2e`, an empty segment or a backslash put in.
 *
 * `{port}` in a header or the raw bytes is the server's port, put in when the case is sent.
 */
export type StrangerExpectation = { readonly status: number; readonly code: string };

export type StrangerCase = FuzzCase & { readonly expected: StrangerExpectation };

export const strangerKinds = [
  'stranger origin',
  'stranger host',
  'stranger content-type',
  'stranger unframed',
  'stranger path',
] as const;

const foreignOrigins = [
  'http://evil.example',
  'https://evil.example',
  'null',
  'http://127.0.0.1:1',
  'https://127.0.0.1:{port}',
  'http://localhost.evil.example:{port}',
  'http://127.0.0.1.nip.io:{port}',
];
const foreignHosts = [
  'rebind.evil.example:{port}',
  '127.0.0.1:1',
  '127.0.0.1',
  'localhost',
  'localhost.evil.example:{port}',
  '127.0.0.2:{port}',
  '0.0.0.0:{port}',
  '[::2]:{port}',
];
const formTypes = [
  'text/plain',
  'text/plain;charset=UTF-8',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/jsonx',
  'application/json-patch+json',
  'text/json',
];
const trailing = ['[[[]]]', '{"node":"fuzz-unframed"}', 'GARBAGE / HTTP/1.1\r\n\r\n', '\u0000\u0001\u0002'];

/** The path with a trick put in before its last segment, or in a segment of its own. */
function trickedPaths(path: string): string[] {
  const [bare, query] = path.split('?');
  const segments = (bare ?? '/').split('/');
  const last = segments.pop() ?? '';
  const head = segments.join('/') || '';
  const tail = query === undefined ? '' : `?${query}`;
  return [
    `${head}/x/../${last}${tail}`,
    `${head}/./${last}${tail}`,
    `${head}/x/%2e%2e/${last}${tail}`,
    `${head}/%2E/${last}${tail}`,
    `${head}//${last}${tail}`,
    `${head}/x\\..\\${last}${tail}`,
    `/..${bare}${tail}`,
  ];
}

const takesBody = (method: string) => method === 'POST' || method === 'PUT';

/** The stranger cases of one valid case of the route fuzz. */
export function strangerCases(valid: fc.Arbitrary<FuzzCase>): fc.Arbitrary<StrangerCase> {
  const origin = fc.tuple(valid, fc.constantFrom(...foreignOrigins)).map(
    ([base, value]): StrangerCase => ({
      ...base,
      kind: `stranger origin: ${value}`,
      headers: { ...base.headers, origin: value },
      expected: { status: 403, code: 'origin_not_allowed' },
    }),
  );
  const host = fc.tuple(valid, fc.constantFrom(...foreignHosts)).map(
    ([base, value]): StrangerCase => ({
      ...base,
      kind: `stranger host: ${value}`,
      headers: { ...base.headers, host: value },
      expected: { status: 403, code: 'host_not_allowed' },
    }),
  );
  const contentType = fc
    .tuple(
      valid.filter((base) => takesBody(base.method)),
      fc.constantFrom(...formTypes, undefined),
    )
    .map(([base, type]): StrangerCase => {
      const { 'content-type': _json, ...others } = base.headers;
      return {
        ...base,
        kind: `stranger content-type: ${type ?? 'none'}`,
        headers: { ...others, ...(type ? { 'content-type': type } : {}) },
        body: base.body === '' ? '{}' : base.body,
        expected: { status: 415, code: 'unsupported_media_type' },
      };
    });
  const unframed = fc
    .tuple(
      valid,
      fc.constantFrom('after none', 'on a route that takes none', 'chunked on a route that takes none'),
      fc.constantFrom(...trailing),
    )
    .map(([base, how, bytes]): StrangerCase => {
      const method = how === 'after none' ? base.method : takesBody(base.method) ? 'DELETE' : base.method;
      const start = `${method} ${base.path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n`;
      const raw =
        how === 'after none'
          ? `${start}\r\n${bytes}`
          : how === 'on a route that takes none'
            ? `${start}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(bytes, 'latin1')}\r\nConnection: close\r\n\r\n${bytes}`
            : `${start}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n${Buffer.byteLength(bytes, 'latin1').toString(16)}\r\n${bytes}\r\n0\r\n\r\n`;
      return {
        ...base,
        kind: `stranger unframed: ${how}`,
        method,
        rawBytes: raw,
        expected:
          how === 'after none'
            ? { status: 400, code: 'malformed_request' }
            : { status: 400, code: 'body_not_allowed' },
      };
    });
  const path = valid
    .chain((base) => fc.constantFrom(...trickedPaths(base.path)).map((tricked) => [base, tricked] as const))
    .map(
      ([base, tricked]): StrangerCase => ({
        ...base,
        kind: `stranger path: ${tricked.replace(/[a-z0-9-]{3,}/g, '…').slice(0, 40)}`,
        path: tricked,
        expected: { status: 400, code: 'invalid_path' },
      }),
    );
  return fc.oneof(origin, host, contentType, unframed, path);
}
