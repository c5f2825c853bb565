import fc from 'fast-check';
import type * as z from 'zod';
import { maxBodyBytes } from '../../../lib/server/api/http.ts';
import type { Route } from '../../../lib/server/functions/table.ts';
import { type Forgery, forgeries } from './host-proofs.ts';
import { methodsAt, type RouteRequest } from './route-requests.ts';
import {
  type Broken,
  brokenValue,
  hostileStrings,
  type Json,
  jsonSchemaOf,
  type Pools,
  validValue,
} from './schema-values.ts';

/**
 * One fuzzed request. A host route's case says how to sign it; the proof is made when the case
 * is sent (it carries the time, and the node's key may have been rotated by an earlier case).
 */
export type FuzzCase = {
  /** The function the request is meant for (lib/server/functions/table.ts), or `(no route)`. */
  readonly route: string;
  /** What was done to it: `valid`, or the one thing broken. */
  readonly kind: string;
  readonly method: string;
  /** As sent, query included. */
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** `latin1`: each character of the body is one byte (bytes that are not UTF-8). */
  readonly bodyEncoding: 'utf8' | 'latin1';
  readonly host?: HostSigning;
  /** An enrolment with a token issued for its node just before it is sent, and new keys. */
  readonly liveToken?: boolean;
  /** Sent as these bytes on a connection of its own, exactly (`{port}` the server's), not as a request built from the rest. */
  readonly rawBytes?: string;
  /** The refusal a stranger's case must get (stranger-cases.ts). */
  readonly expected?: { readonly status: number; readonly code: string };
};

export type HostSigning = {
  /** The enrolled node whose key signs. */
  readonly signer: string;
  /** `valid`; a forgery; `replay`: the last accepted host request sent again as it was. */
  readonly proof: 'valid' | 'replay' | Forgery;
  /** The body the proof signs when it is not the one sent. */
  readonly signedBody?: string;
  /** A key rotation whose new keys and possession proof are made when it is sent. */
  readonly freshRotation?: boolean;
};

export type FuzzWorld = {
  /** Values valid requests are drawn from, by the pattern they match (names, tokens). */
  readonly pools: Pools;
  /** The enrolled nodes whose keys sign host requests; each signs for itself. */
  readonly hosts: readonly string[];
  /** Valid parts that fit together, by route: drawn a third of the time for that route's valid requests. */
  readonly examples: Readonly<
    Record<string, ReadonlyArray<Partial<Pick<Parts, 'params' | 'query' | 'body'>>>>
  >;
};

type FuzzedRoute = Route & { readonly request: RouteRequest };

const methods = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const;
const hostileQueryNames = [
  'constructor',
  '__proto__',
  'toString',
  'hasOwnProperty',
  'valueOf',
  'limit',
  'cascade',
  'x',
];
const badHosts = ['bad host', 'a:b:c', '[::1', 'exa_mple:99999', '%', '..'];

/** Every kind of case for every route, weighted so each route gets its share. */
export function fuzzCases(routes: readonly FuzzedRoute[], world: FuzzWorld): fc.Arbitrary<FuzzCase> {
  // Host routes weigh twice as much: each also gets forged and replayed proofs.
  const perRoute = routes.map((route) => ({
    weight: route.auth === 'host' ? 2 : 1,
    arbitrary: routeCases(route, world),
  }));
  return fc.oneof(
    { weight: 30, arbitrary: fc.oneof(...perRoute) },
    { weight: 1, arbitrary: unroutedCases() },
  );
}

/** A valid request of any route, each route as likely: what the stranger cases are made from. */
export function validCases(routes: readonly FuzzedRoute[], world: FuzzWorld): fc.Arbitrary<FuzzCase> {
  return fc.oneof(
    ...routes.map((route) => validParts(route, world).map((parts) => caseOf(route, world, 'valid', parts))),
  );
}

function routeCases(route: FuzzedRoute, world: FuzzWorld): fc.Arbitrary<FuzzCase> {
  const valid = validParts(route, world);
  const wrongMethod = fc.constantFrom(...methods.filter((method) => !methodsAt(route.path).includes(method)));
  const options: Array<fc.WeightedArbitrary<FuzzCase>> = [
    { weight: 3, arbitrary: valid.map((parts) => caseOf(route, world, 'valid', parts)) },
    {
      weight: 6,
      arbitrary: valid
        .chain((parts) => brokenParts(route, parts, world))
        .map(([kind, parts]) => caseOf(route, world, kind, parts)),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(valid, wrongMethod)
        .map(([parts, method]) => ({ ...caseOf(route, world, `wrong method: ${method}`, parts), method })),
    },
  ];
  if (route.auth === 'host')
    options.push({
      weight: 4,
      arbitrary: fc
        .tuple(
          valid,
          fc.oneof(
            fc.constant<HostSigning['proof']>('replay'),
            fc.constantFrom<HostSigning['proof']>(...forgeries),
          ),
        )
        .map(([parts, proof]) => {
          const made = caseOf(
            route,
            world,
            proof === 'replay' ? 'replay: the last accepted host request again' : `forged proof: ${proof}`,
            parts,
          );
          return { ...made, host: { ...(made.host as HostSigning), proof, freshRotation: false } };
        }),
    });
  return fc.oneof(...options);
}

/** A request's parts before they are put together: path parameters, query and body as values. */
export type Parts = {
  readonly params: Readonly<Record<string, Json>>;
  readonly query: Readonly<Record<string, Json>>;
  readonly body: Json | undefined;
  /** Set when the body is sent as these bytes rather than as JSON of `body`. */
  readonly rawBody?: string;
  /** The raw body's characters are its bytes (to send bytes that are not UTF-8). */
  readonly latin1?: boolean;
  readonly rawPath?: boolean;
  readonly extraQuery?: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** The proof signs the valid body while a broken one is sent. */
  readonly signValidBody?: boolean;
  readonly validBody?: Json | undefined;
  readonly signer?: string;
};

function validParts(route: FuzzedRoute, world: FuzzWorld): fc.Arbitrary<Parts> {
  const { request } = route;
  const schemaValue = (schema: z.ZodType | undefined) =>
    schema
      ? validValue(jsonSchemaOf(schema), world.pools).filter((value) => schema.safeParse(value).success)
      : fc.constant(undefined);
  const signer = route.auth === 'host' ? fc.constantFrom(...world.hosts) : fc.constant(undefined);
  const examples = world.examples[route.handler] ?? [];
  const fromSchemas = fc
    .tuple(schemaValue(request.path), schemaValue(request.query), schemaValue(request.body), signer)
    .map(([params, query, body, host]) => ({
      // A host speaks for itself: its route's node is its own.
      params: host
        ? { ...(params as Record<string, Json>), node: host }
        : ((params ?? {}) as Record<string, Json>),
      query: (query ?? {}) as Record<string, Json>,
      body,
      ...(host ? { signer: host } : {}),
    }));
  if (examples.length === 0) return fromSchemas;
  const fromExamples = fc
    .constantFrom(...examples)
    .map((example) => ({ params: {}, query: {}, body: undefined, ...example }));
  return fc.oneof({ weight: 2, arbitrary: fromSchemas }, { weight: 1, arbitrary: fromExamples });
}

/**
 * The valid parts broken in one place: a path parameter, the query, a header, the body (as
 * bytes, or one field of it), or, on a host route, the node in the path. Each kind is named
 * `<where>: <what>`; the body's breaks weigh most, as most of what a route checks is there.
 */
function brokenParts(route: FuzzedRoute, parts: Parts, world: FuzzWorld): fc.Arbitrary<[string, Parts]> {
  const options: Array<fc.WeightedArbitrary<[string, Parts]>> = [];
  const add = (weight: number, arbitrary: fc.Arbitrary<[string, Parts]>) =>
    options.push({ weight, arbitrary });
  const { request } = route;
  const paramNames = Object.keys(parts.params);
  if (paramNames.length > 0)
    add(
      3,
      fc
        .tuple(
          fc.constantFrom(...paramNames),
          fc.constantFrom(...hostileStrings, '%E0%A4%A', '%2F', '%2e%2e'),
          fc.boolean(),
        )
        .map(([name, value, raw]) => [
          `path: ${name} ${JSON.stringify(value)}${raw ? ' unencoded' : ''}`,
          { ...parts, params: { ...parts.params, [name]: value }, rawPath: raw },
        ]),
    );
  const others = world.hosts.filter((host) => host !== parts.signer);
  if (route.auth === 'host' && paramNames.includes('node') && others.length > 0)
    add(
      1,
      fc
        .constantFrom(...others)
        .map((node) => ['path: another enrolled node', { ...parts, params: { ...parts.params, node } }]),
    );
  add(
    1,
    fc
      .tuple(
        fc.constantFrom(...hostileQueryNames),
        fc.constantFrom('1', '', 'true', '0', '-1', 'abc', '1e3', 'x'.repeat(3000)),
      )
      .map(([name, value]) => [
        `query: ${name}=${value.slice(0, 20)}`,
        { ...parts, extraQuery: `${percentEncoded(name)}=${percentEncoded(value)}` },
      ]),
  );
  add(
    1,
    fc.constant([
      'query: names given twice',
      { ...parts, extraQuery: 'limit=1&limit=2&cascade=true&cascade=false' },
    ]),
  );
  add(
    1,
    fc
      .constantFrom(...badHosts)
      .map((host) => [`header: Host ${JSON.stringify(host)}`, { ...parts, headers: { host } }]),
  );
  if (request.query && Object.keys(parts.query).length > 0)
    add(
      1,
      brokenValue(jsonSchemaOf(request.query), parts.query as Json).map((broken) => [
        `query: ${broken.what}`,
        { ...parts, query: flatQuery(broken) },
      ]),
    );
  if (request.body !== undefined || route.method !== 'GET')
    add(
      3,
      fc
        .constantFrom(
          ['not JSON', '{"node": '],
          ['JSON with trailing garbage', '{} x'],
          ['a JSON string', '"x"'],
          ['JSON null', 'null'],
          ['JSON nested 5,000 deep', `${'['.repeat(5000)}${']'.repeat(5000)}`],
          [
            '__proto__ in the JSON',
            '{"__proto__": {"polluted": true}, "constructor": {"prototype": {"polluted": true}}}',
          ],
          ['an oversized body', `{"pad": "${'x'.repeat(maxBodyBytes + 10)}"}`],
          ['a body just under the limit', `{"pad": "${'x'.repeat(maxBodyBytes - 20)}"}`],
          ['invalid UTF-8', '{"node": "\xff\xfe"}'],
        )
        .map(([what, rawBody]) => {
          const latin1 = what === 'invalid UTF-8';
          return [`body: ${what}`, { ...parts, rawBody, latin1, validBody: parts.body }] as [string, Parts];
        }),
    );
  if (request.body && parts.body !== undefined)
    add(
      6,
      brokenValue(jsonSchemaOf(request.body), parts.body).map((broken: Broken) => [
        `body: ${broken.what}`,
        { ...parts, body: broken.value, validBody: parts.body },
      ]),
    );
  if (route.auth === 'host' && request.body && parts.body !== undefined)
    add(
      3,
      brokenValue(jsonSchemaOf(request.body), parts.body).map((broken: Broken) => [
        `body: ${broken.what}, the proof signing the valid body`,
        { ...parts, body: broken.value, validBody: parts.body, signValidBody: true },
      ]),
    );
  return fc.oneof(...options);
}

/** A broken query object as query pairs: what is not a string is sent as its JSON. */
function flatQuery(broken: Broken): Record<string, Json> {
  const value = broken.value;
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value;
  return { limit: JSON.stringify(value) };
}

function caseOf(route: FuzzedRoute, world: FuzzWorld, kind: string, parts: Parts): FuzzCase {
  const path = route.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = String(parts.params[name] ?? '');
    return parts.rawPath ? value : percentEncoded(value);
  });
  const pairs = Object.entries(parts.query).map(
    ([name, value]) =>
      `${percentEncoded(name)}=${percentEncoded(typeof value === 'string' ? value : JSON.stringify(value))}`,
  );
  if (parts.extraQuery) pairs.push(parts.extraQuery);
  const body = parts.rawBody ?? (parts.body === undefined ? '' : JSON.stringify(parts.body));
  const made: FuzzCase = {
    route: route.handler,
    kind,
    method: route.method,
    path: `${safePath(path)}${pairs.length > 0 ? `?${pairs.join('&')}` : ''}`,
    headers: { 'content-type': 'application/json', ...parts.headers },
    body,
    bodyEncoding: parts.latin1 ? 'latin1' : 'utf8',
    // The schema's tokens are never live: a valid enrolment needs one issued just before.
    ...(route.handler === 'enrol' && kind === 'valid' ? { liveToken: true } : {}),
  };
  if (route.auth !== 'host' || !parts.signer) return made;
  return {
    ...made,
    host: {
      signer: parts.signer,
      proof: 'valid',
      ...(parts.signValidBody ? { signedBody: JSON.stringify(parts.validBody) } : {}),
      // A valid key rotation needs keys made now; the schema's random keys never verify.
      freshRotation: route.handler === 'host-keys' && kind === 'valid' && world.hosts.length > 0,
    },
  };
}

/** Percent-encoding that takes any string, a lone surrogate included (as U+FFFD, the way UTF-8 encoders do). */
const percentEncoded = (text: string) =>
  text.replace(/[^A-Za-z0-9\-_.!~*'()]/gu, (char) =>
    [...Buffer.from(char, 'utf8')]
      .map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`)
      .join(''),
  );

/** Characters node's HTTP client will not put in a path (spaces, controls, beyond ASCII) are escaped. */
const safePath = (path: string) => path.replace(/[^\u0021-\u007e]/gu, percentEncoded);

/** Requests for no route: unknown paths, doubled slashes, a trailing slash, case, an empty segment. */
function unroutedCases(): fc.Arbitrary<FuzzCase> {
  return fc
    .tuple(
      fc.constantFrom(
        '/x',
        '//x/health',
        '/health/',
        '/NODES',
        '/nodes//token',
        '/hosts',
        '/%',
        '/push/plan/x',
        '/../health',
        '/a'.repeat(500),
      ),
      fc.constantFrom(...methods),
    )
    .map(([path, method]) => ({
      route: '(no route)',
      kind: `no route: ${method} ${path.slice(0, 40)}`,
      method,
      path,
      headers: {},
      body: '',
      bodyEncoding: 'utf8' as const,
    }));
}
