import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { ApiAuthorizers } from './api-authorizers.ts';
import {
  matchResource,
  proxyEvent,
  type RoutedRequest,
  requestContext,
  requestHeaders,
} from './api-events.ts';
import type { ApiModel, Throttle } from './api-model.ts';
import { gatewayAnswer } from './gateway-responses.ts';
import type { IamCheck } from './iam-check.ts';
import { LambdaInvocationError, type LambdaService } from './lambda-service.ts';
import type { RehearsalLedger } from './ledger.ts';
import { rehearsalOperator, verifyOperatorSignature } from './operator-signature.ts';
import { RehearsalProblem } from './problems.ts';

export type ApiGatewayDeps = {
  readonly api: ApiModel;
  readonly lambda: LambdaService;
  readonly iam: IamCheck;
  readonly ledger: RehearsalLedger;
  readonly region: string;
  readonly account: string;
  readonly partition: string;
};

/** API Gateway's payload limit. */
const bodyLimitBytes = 10 * 1024 * 1024;

/** API Gateway's throttling: a bucket of burstLimit tokens refilled at rateLimit a second. */
class TokenBucket {
  readonly #throttle: Throttle;
  #tokens: number;
  #last = Date.now();
  constructor(throttle: Throttle) {
    this.#throttle = throttle;
    this.#tokens = throttle.burstLimit;
  }
  take(): boolean {
    const now = Date.now();
    const { burstLimit, rateLimit } = this.#throttle;
    this.#tokens = Math.min(burstLimit, this.#tokens + ((now - this.#last) / 1000) * rateLimit);
    this.#last = now;
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }
}

type Refusal = { readonly type: string; readonly message: string; readonly status?: number };

function validProxyResult(value: unknown): string | undefined {
  const result = value as Partial<APIGatewayProxyResult> | null;
  if (!result || typeof result !== 'object') return 'it returned no object';
  if (!Number.isInteger(Number(result.statusCode))) return 'its statusCode is not a number';
  if (result.body !== undefined && typeof result.body !== 'string') return 'its body is not a string';
  for (const [name, header] of Object.entries(result.headers ?? {}))
    if (typeof header === 'object') return `its header ${name} is not a string, number or boolean`;
  return undefined;
}

/**
 * The template's REST API on a local port, served the way API Gateway serves it: routed by the
 * template's resources and methods under the stage's path, throttled by the stage's settings,
 * IAM methods requiring a SigV4 signature, custom methods passing the Lambda authorizer, the
 * validator's required parameters checked, the function invoked only if API Gateway may invoke
 * it, and every refusal answered with the template's gateway responses.
 */
export class ApiGateway {
  readonly #deps: ApiGatewayDeps;
  readonly #authorizers: ApiAuthorizers;
  readonly #buckets = new Map<string, TokenBucket>();
  #server: Server | undefined;
  url = '';

  constructor(deps: ApiGatewayDeps) {
    this.#deps = deps;
    this.#authorizers = new ApiAuthorizers({ ...deps, executeApiArn: this.#executeApiArn() });
  }

  async listen(port: number, host = '127.0.0.1'): Promise<string> {
    const server = createServer((request, response) => {
      this.#serve(request, response).catch((error: unknown) => {
        this.#deps.ledger.problem(
          new RehearsalProblem(
            'api',
            `the rehearsal's API Gateway failed: ${(error as Error).stack ?? String(error)}`,
          ),
        );
        if (!response.headersSent) response.writeHead(500).end();
      });
    });
    server.keepAliveTimeout = 5_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    this.#server = server;
    const address = server.address();
    this.url = `http://${host}:${typeof address === 'object' && address ? address.port : port}/${this.#deps.api.stageName}`;
    return this.url;
  }

  async stop(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  #executeApiArn(): string {
    const { partition, region, account, api } = this.#deps;
    return `arn:${partition}:execute-api:${region}:${account}:${api.restApiId}`;
  }

  #throttled(key: string, throttle: Throttle | undefined): boolean {
    if (!throttle) return false;
    let bucket = this.#buckets.get(key);
    if (!bucket) {
      bucket = new TokenBucket(throttle);
      this.#buckets.set(key, bucket);
    }
    return !bucket.take();
  }

  async #serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const { api, lambda, iam, ledger, account } = this.#deps;
    const requestId = randomUUID();
    const refuse = (refusal: Refusal, routed?: RoutedRequest) => {
      const answer = gatewayAnswer(api.gatewayResponses, {
        ...refusal,
        values: {
          'context.requestId': requestId,
          'context.extendedRequestId': requestId,
          'context.stage': api.stageName,
          'context.apiId': api.restApiId,
          'context.httpMethod': request.method ?? '',
          'context.resourcePath': routed?.method.resourcePath ?? '',
        },
      });
      response
        .writeHead(answer.status, { ...answer.headers, 'x-amzn-RequestId': requestId })
        .end(answer.body);
    };
    const url = new URL(request.url ?? '/', `http://${request.headers.host ?? '127.0.0.1'}`);
    const stagePrefix = `/${api.stageName}`;
    if (url.pathname !== stagePrefix && !url.pathname.startsWith(`${stagePrefix}/`))
      return refuse({ type: 'MISSING_AUTHENTICATION_TOKEN', message: 'Missing Authentication Token' });
    const segments = url.pathname.slice(stagePrefix.length).split('/').filter(Boolean).map(safeDecode);
    const found = matchResource(api.root, segments);
    const method = found?.node.methods.get(request.method ?? '') ?? found?.node.methods.get('ANY');
    if (!found || !method)
      return refuse({ type: 'MISSING_AUTHENTICATION_TOKEN', message: 'Missing Authentication Token' });
    const path = `/${segments.join('/')}`;
    if (
      this.#throttled(
        `${method.httpMethod} ${method.resourcePath}`,
        api.methodThrottles.get(`${method.httpMethod} ${method.resourcePath}`),
      ) ||
      this.#throttled('stage', api.stageThrottle)
    )
      return refuse({ type: 'THROTTLED', message: 'Too Many Requests' });

    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of request) {
      size += (chunk as Buffer).length;
      if (size > bodyLimitBytes) return refuse({ type: 'REQUEST_TOO_LARGE', message: 'Request Too Long' });
      chunks.push(chunk as Buffer);
    }
    const routed: RoutedRequest = {
      method,
      pathParameters: found.pathParameters,
      path,
      fullPath: url.pathname,
      url,
      ...requestHeaders(request),
      requestId,
      sourceIp: request.socket.remoteAddress ?? '127.0.0.1',
      userAgent: request.headers['user-agent'] ?? null,
      body: Buffer.concat(chunks),
      receivedAt: Date.now(),
    };
    const methodArn = `${this.#executeApiArn()}/${api.stageName}/${method.httpMethod}${path}`;

    let identity: Record<string, string | null> = {};
    let authorizer: Record<string, unknown> | null = null;
    if (method.authorizationType === 'AWS_IAM') {
      const verdict = await verifyOperatorSignature(
        {
          method: method.httpMethod,
          target: request.url ?? '/',
          headers: lowerCased(request),
          body: routed.body,
        },
        { region: this.#deps.region },
      );
      if (!verdict.ok) return refuse(verdict, routed);
      const userArn = rehearsalOperator.userArn(account);
      identity = {
        accessKey: verdict.accessKeyId,
        accountId: account,
        caller: verdict.accessKeyId,
        user: verdict.accessKeyId,
        userArn,
      };
    } else if (method.authorizationType === 'CUSTOM' && method.authorizer) {
      const outcome = await this.#authorizers.authorize(
        method.authorizer,
        routed,
        methodArn,
        requestContext(api, routed, account),
      );
      if (!outcome.allowed) return refuse(outcome, routed);
      authorizer = outcome.context;
    }
    const missing = method.requiredParameters.filter((parameter) => {
      const [, where, name = ''] = /^method\.request\.(querystring|header|path)\.(.+)$/.exec(parameter) ?? [];
      if (where === 'querystring') return !url.searchParams.has(name);
      if (where === 'header') return request.headers[name.toLowerCase()] === undefined;
      return where === 'path' && !routed.pathParameters[name];
    });
    if (missing.length > 0)
      return refuse(
        {
          type: 'BAD_REQUEST_PARAMETERS',
          message: `Missing required request parameters: [${missing.map((p) => p.split('.').pop()).join(', ')}]`,
        },
        routed,
      );

    const allowed = await iam.authorize(
      { kind: 'service', service: 'apigateway.amazonaws.com', sourceArn: methodArn, label: 'API Gateway' },
      { action: 'lambda:InvokeFunction', resource: method.fn.arn },
    );
    if (!allowed.allowed)
      return refuse({ type: 'API_CONFIGURATION_ERROR', message: 'Internal server error' }, routed);

    const event = proxyEvent(routed, requestContext(api, routed, account, { identity, authorizer }));
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), method.timeoutMs);
    });
    let result: unknown;
    try {
      result = await Promise.race([lambda.invoke(method.fn, event), timedOut]);
    } catch (error) {
      if (!(error instanceof LambdaInvocationError)) throw error;
      return refuse({ type: 'INTEGRATION_FAILURE', message: 'Internal server error', status: 502 }, routed);
    } finally {
      clearTimeout(timer);
    }
    if (result === 'timeout')
      return refuse({ type: 'INTEGRATION_TIMEOUT', message: 'Endpoint request timed out' }, routed);
    const invalid = validProxyResult(result);
    if (invalid) {
      ledger.problem(
        new RehearsalProblem(
          'api',
          `${method.fn.displayName} answered ${method.httpMethod} ${method.resourcePath} with a malformed proxy response: ${invalid}`,
        ),
      );
      return refuse({ type: 'INTEGRATION_FAILURE', message: 'Internal server error', status: 502 }, routed);
    }
    const proxy = result as APIGatewayProxyResult;
    const headers: Record<string, string | string[]> = { 'content-type': 'application/json' };
    for (const [name, value] of Object.entries(proxy.headers ?? {}))
      headers[name.toLowerCase()] = String(value);
    for (const [name, values] of Object.entries(proxy.multiValueHeaders ?? {}))
      headers[name.toLowerCase()] = values.map(String);
    response.writeHead(Number(proxy.statusCode), { ...headers, 'x-amzn-RequestId': requestId });
    response.end(proxy.isBase64Encoded ? Buffer.from(proxy.body ?? '', 'base64') : (proxy.body ?? ''));
  }
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

function lowerCased(request: IncomingMessage): Record<string, string> {
  return Object.fromEntries(
    Object.entries(request.headers).map(([name, value]) => [name, [value ?? ''].flat().join(',')]),
  );
}
