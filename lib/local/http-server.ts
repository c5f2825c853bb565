import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { type StaticPage, servePage } from '../clients/cli/console/pages.ts';
import { listen } from '../clients/http/listen.ts';
import {
  loopbackRefusal,
  refuseBrokenFraming,
  sendRefusal,
  settledUnbroken,
} from '../clients/http/loopback-guard.ts';
import { isRefusal, type RequestTarget, requestTarget } from '../clients/http/request-target.ts';
import { maxBodyBytes } from '../server/api/http.ts';
import { matchRoute } from '../server/functions/routes.ts';
import type { ApiHandler } from '../server/functions/spec.ts';
import {
  type ApiFunctionSpec,
  type FunctionSpec,
  functionSpecs,
  type Route,
  routesOf,
} from '../server/functions/table.ts';
import type { Parts } from '../server/wiring/parts.ts';
import { awsQuotas, invocation } from './aws-quotas.ts';
import { asFunction } from './call-record.ts';
import { LocalFirewall, type LocalFirewallLimits } from './firewall.ts';
import { localLambdaContext } from './lambda-context.ts';
import { type LocalReleaseFiles, releaseFilesPath } from './release-files.ts';

export type LocalApiOptions = {
  readonly port: number;
  readonly host?: string;
  /** What every handler is built from. */
  readonly parts: Parts;
  /** @default every function of lib/server/functions/table.ts */
  readonly specs?: readonly FunctionSpec<Parts>[];
  /** Files served beside the routes, by exact path (the console). @default none */
  readonly pages?: readonly StaticPage[];
  /**
   * The time each handler's context says it has, as a function's timeout would (tests that make
   * an apply outlive its request). @default 30 s
   */
  readonly requestTimeoutMs?: number;
  /** How long API Gateway waits for its integration. @default 29 s (tests shorten it to see its 504) */
  readonly integrationTimeoutMs?: number;
  /** Answer as the deployed firewall would, per source address (MESH_LOCAL_FIREWALL). @default off */
  readonly firewall?: LocalFirewallLimits;
  /** The agent's executables, served on their own path as S3 serves them on AWS. @default none */
  readonly releaseFiles?: LocalReleaseFiles;
};

/** A route's handler, and its row: its timeout and reserved concurrency hold its invocations. */
type Loaded = { readonly handler: ApiHandler; readonly spec: ApiFunctionSpec<Parts> };

export type RunningApi = { readonly url: string; readonly server: Server; stop(): Promise<void> };

/**
 * Serves the route table the way API Gateway's Lambda proxy integration would: the same
 * handlers, called in-process with the same event shape.
 */
export async function startLocalApi(options: LocalApiOptions): Promise<RunningApi> {
  const specs: readonly FunctionSpec<Parts>[] = options.specs ?? functionSpecs;
  const table = routesOf(specs);
  const handlers = new Map<string, Loaded>();
  const load = (name: string): Loaded => {
    let loaded = handlers.get(name);
    if (!loaded) {
      const spec = specs.find(
        (entry): entry is ApiFunctionSpec<Parts> => entry.name === name && entry.trigger === 'api',
      );
      if (!spec) throw new Error(`no api function named ${name}`);
      loaded = { handler: spec.handler(options.parts), spec };
      handlers.set(name, loaded);
    }
    return loaded;
  };
  const host = options.host ?? '127.0.0.1';
  let port = options.port;
  const firewall = options.firewall ? new LocalFirewall(options.firewall) : undefined;
  const server = createServer((request, response) => {
    const refused = firewall?.admit(request.socket.remoteAddress ?? '', request.url ?? '/');
    if (refused) {
      request.resume();
      response.writeHead(refused.status, {
        'content-type': 'application/json',
        'retry-after': String(refused.retryAfterSeconds),
      });
      response.end(refused.body);
      return;
    }
    const served = {
      table,
      pages: options.pages ?? [],
      timeoutMs: options.requestTimeoutMs,
      integrationMs: options.integrationTimeoutMs ?? awsQuotas.apiIntegrationMs,
      port,
      releaseFiles: options.releaseFiles,
    };
    serve(request, response, served, load).catch((error: unknown) => {
      process.stderr.write(`mesh local api: ${(error as Error).stack ?? String(error)}\n`);
      if (!response.headersSent)
        send(response, 500, { error: { code: 'internal', message: 'internal error' } });
    });
  });
  server.keepAliveTimeout = 5_000;
  refuseBrokenFraming(server);
  const running = await listen(server, options.port, host);
  port = running.port;
  options.releaseFiles?.listening(running.url);
  return running;
}

async function serve(
  request: IncomingMessage,
  response: ServerResponse,
  {
    table,
    pages,
    timeoutMs,
    integrationMs,
    port,
    releaseFiles,
  }: {
    readonly releaseFiles?: LocalReleaseFiles | undefined;
    readonly table: readonly Route[];
    readonly pages: readonly StaticPage[];
    readonly timeoutMs: number | undefined;
    readonly integrationMs: number;
    readonly port: number;
  },
  load: (name: string) => Loaded,
) {
  const method = request.method ?? 'GET';
  const target = request.url ?? '/';
  // Who may ask, first: a stranger's request is refused before its path is even read. An
  // executable's upload is the one body not sent as JSON: its signed URL is its authority.
  const releaseUpload = releaseFiles !== undefined && method === 'PUT' && target.startsWith(releaseFilesPath);
  const refusal = loopbackRefusal(
    {
      method,
      target,
      headers: releaseUpload ? { ...request.headers, 'content-type': 'application/json' } : request.headers,
    },
    port,
  );
  if (refusal) {
    request.resume();
    sendRefusal(response, refusal);
    return;
  }
  const url = requestTarget(target);
  if (isRefusal(url)) {
    request.resume();
    sendRefusal(response, url);
    return;
  }
  if (servePage(pages, { method, path: url.path }, response)) return;
  if (releaseFiles && (await releaseFiles.serve(request, response, url.path, url.query))) return;
  let match: ReturnType<typeof matchRoute>;
  try {
    match = matchRoute(table, method, url.path);
  } catch (error) {
    if (!(error instanceof URIError)) throw error;
    send(response, 400, {
      error: { code: 'invalid_request', message: 'the path is not valid percent-encoding' },
    });
    return;
  }
  if (!match) {
    send(response, 404, {
      error: { code: 'route_not_found', message: `no route ${method} ${url.path}` },
    });
    return;
  }
  if ('allowed' in match) {
    send(
      response,
      405,
      { error: { code: 'method_not_allowed', message: `${method} is not allowed on ${url.path}` } },
      { allow: match.allowed.join(', ') },
    );
    return;
  }
  const bodyBytes = match.route.bodyBytes ?? maxBodyBytes;
  const body = await readBody(request, Math.min(bodyBytes, awsQuotas.apiPayloadBytes));
  if (body === undefined && bodyBytes > awsQuotas.apiPayloadBytes) {
    // API Gateway's own answer: the request never reaches the function
    send(response, 413, { message: 'Request Too Long' });
    return;
  }
  if (body === undefined) {
    send(response, 413, {
      error: { code: 'body_too_large', message: `the request body is larger than ${bodyBytes} bytes` },
    });
    return;
  }
  // A connection whose bytes after this request broke framing is answered by clientError; this
  // request of it does not run (loopback-guard.ts).
  if (!(await settledUnbroken(request))) return;
  const { handler, spec } = load(match.route.handler);
  const event = toProxyEvent(request, url, match.route, match.pathParameters, body);
  const fn = match.route.handler;
  // API Gateway waits 29 s for its integration; a function with a shorter timeout fails first
  const gatewayCuts = (spec.timeoutSeconds ?? awsQuotas.defaultTimeoutSeconds) * 1000 >= integrationMs;
  let result: APIGatewayProxyResult;
  try {
    result = await invocation(
      fn,
      () => asFunction(fn, () => handler(event, localLambdaContext(fn, timeoutMs))),
      {
        payload: event,
        spec,
        ...(gatewayCuts ? { timeoutSeconds: integrationMs / 1000 } : {}),
      },
    );
  } catch (error) {
    const answer = gatewayAnswer(error, gatewayCuts);
    if (!answer) throw error;
    process.stderr.write(`mesh local api: ${fn}: ${(error as Error).name}: ${(error as Error).message}\n`);
    send(response, answer.status, { message: answer.message });
    return;
  }
  response.writeHead(result.statusCode, flattenHeaders(result));
  response.end(result.isBase64Encoded ? Buffer.from(result.body, 'base64') : result.body);
}

/**
 * What API Gateway answers when its Lambda integration fails for a quota: its own bodies, not the
 * API's problem shape. Undefined for an error the handler threw (answered as the server's 500).
 */
function gatewayAnswer(
  error: unknown,
  gatewayCuts: boolean,
): { status: number; message: string } | undefined {
  switch ((error as Error).name) {
    case 'Sandbox.Timedout':
      return gatewayCuts
        ? { status: 504, message: 'Endpoint request timed out' }
        : { status: 502, message: 'Internal server error' };
    case 'Lambda.TooManyRequestsException':
      return { status: 429, message: 'Too Many Requests' };
    case 'Lambda.RequestTooLargeException':
      return { status: 413, message: 'Request Too Long' };
    case 'Lambda.ResponseSizeTooLarge':
      return { status: 502, message: 'Internal server error' };
    default:
      return undefined;
  }
}

function toProxyEvent(
  request: IncomingMessage,
  url: RequestTarget,
  route: Route,
  pathParameters: Record<string, string>,
  body: string,
): APIGatewayProxyEvent {
  const headers: Record<string, string> = {};
  const multiValueHeaders: Record<string, string[]> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue;
    const values = Array.isArray(value) ? value : [value];
    headers[name] = values.join(', ');
    multiValueHeaders[name] = values;
  }
  // a Map, so that a parameter named `constructor` or `__proto__` is a name like any other
  const values = new Map<string, string[]>();
  for (const [name, value] of url.query) values.set(name, [...(values.get(name) ?? []), value]);
  const query = Object.fromEntries([...values].map(([name, all]) => [name, all.at(-1) as string]));
  const multiQuery = Object.fromEntries(values);
  const hasQuery = values.size > 0;
  return {
    httpMethod: route.method,
    path: url.path,
    resource: route.path,
    headers,
    multiValueHeaders,
    pathParameters: Object.keys(pathParameters).length > 0 ? pathParameters : null,
    queryStringParameters: hasQuery ? query : null,
    multiValueQueryStringParameters: hasQuery ? multiQuery : null,
    stageVariables: null,
    body: body === '' ? null : body,
    isBase64Encoded: false,
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      authorizer: null,
      protocol: `HTTP/${request.httpVersion}`,
      httpMethod: route.method,
      identity: {
        sourceIp: request.socket.remoteAddress ?? '127.0.0.1',
        userAgent: request.headers['user-agent'] ?? null,
      } as APIGatewayProxyEvent['requestContext']['identity'],
      domainName: request.headers.host ?? '127.0.0.1',
      path: url.path,
      stage: 'local',
      requestId: randomUUID(),
      requestTimeEpoch: Date.now(),
      resourceId: 'local',
      resourcePath: route.path,
    },
  };
}

async function readBody(request: IncomingMessage, bodyBytes: number): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > bodyBytes) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function flattenHeaders(result: APIGatewayProxyResult): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(result.headers ?? {})) headers[name] = String(value);
  for (const [name, values] of Object.entries(result.multiValueHeaders ?? {}))
    headers[name] = values.join(', ');
  return headers;
}

function send(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(JSON.stringify(body));
}
