import {
  Agent,
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { type AwsCall, type CallContext, credentialScope, readAwsCall } from './aws-requests.ts';
import type { CustomResourceResponses } from './custom-resources.ts';
import type { IamCheck } from './iam-check.ts';
import type { IotCore } from './iot-core.ts';
import { isIotSigningName, readIotCall } from './iot-requests.ts';
import { invokeLater, readLambdaCall } from './lambda-requests.ts';
import type { LambdaService } from './lambda-service.ts';
import type { RehearsalLedger } from './ledger.ts';
import { RehearsalProblem } from './problems.ts';

/** Answers the Step Functions calls a function makes, once IAM has allowed them. */
export type StatesServer = {
  serve(operation: string, input: Record<string, unknown>): Promise<{ status: number; body: unknown }>;
};

export type AwsEndpointRoutes = {
  readonly lambda: LambdaService;
  readonly iam: IamCheck;
  readonly ledger: RehearsalLedger;
  readonly callContext: CallContext;
  /** Where allowed DynamoDB and SQS calls go: the emulators (or a given endpoint). */
  readonly upstream: { readonly dynamodb: string; readonly sqs: string };
  readonly states: StatesServer;
  /** IoT's control plane (DescribeEndpoint) and data plane (Publish). */
  readonly iot: IotCore;
  /** Where custom resource providers PUT their answers (the HTTPS listener). */
  readonly responses: CustomResourceResponses;
};

/** The server certificate of the HTTPS listener (tls-certificate.ts). */
export type EndpointTls = { readonly certPem: string; readonly keyPem: string };

const jsonType = 'application/x-amz-json-1.0';

/**
 * The AWS endpoint every function of the rehearsal calls (its AWS_ENDPOINT_URL). It knows the
 * caller by the role credentials that signed the call, reads the operation and the resources
 * it touches, asks the IAM check, and only then forwards the call to the emulator (or serves a
 * Step Functions or IoT call itself). A denied call is answered as AWS answers it, AccessDenied,
 * so the function meets what it would meet deployed. Its HTTPS listener answers the names AWS
 * serves on 443 with TLS (the IoT data endpoint, CloudFormation's response URLs).
 */
export class AwsEndpoint {
  readonly #servers: readonly Server[];
  readonly #agent = new Agent({ keepAlive: true });
  readonly #interrupted = new Map<string, Set<string>>();
  #routes: AwsEndpointRoutes | undefined;
  readonly port: number;
  /** The HTTPS listener's port, which the sandboxes reach for port 443 of `*.aws.localhost`. */
  readonly httpsPort: number;
  /** Calls dropped while their service was interrupted for the caller. */
  dropped = 0;

  private constructor(servers: readonly Server[], port: number, httpsPort: number) {
    this.#servers = servers;
    this.port = port;
    this.httpsPort = httpsPort;
  }

  /** Listens on the loopback now, plain and with TLS; calls are served once `route` has been given what they need. */
  static async listen(tls: EndpointTls): Promise<AwsEndpoint> {
    let endpoint: AwsEndpoint | undefined;
    const handler = (secure: boolean) => (request: IncomingMessage, response: ServerResponse) => {
      if (!endpoint) return void response.writeHead(503).end();
      endpoint.#serve(request, response, secure).catch((error: unknown) => {
        process.stderr.write(`rehearsal AWS endpoint: ${(error as Error).stack ?? String(error)}\n`);
        if (!response.headersSent) response.writeHead(500).end();
      });
    };
    const servers = [
      createServer(handler(false)),
      createHttpsServer({ cert: tls.certPem, key: tls.keyPem }, handler(true)),
    ];
    const ports = await Promise.all(
      servers.map(async (server) => {
        server.keepAliveTimeout = 5_000;
        await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
        return (server.address() as AddressInfo).port;
      }),
    );
    endpoint = new AwsEndpoint(servers, ports[0] as number, ports[1] as number);
    return endpoint;
  }

  /**
   * `aws.localhost:<port>`: names under `.localhost` resolve to the loopback in every function's
   * sandbox, so the SDK's host prefixes (`sync-aws.localhost` for StartSyncExecution) still arrive here.
   */
  get host(): string {
    return `aws.localhost:${this.port}`;
  }

  /** The endpoint as functions are given it (AWS_ENDPOINT_URL). */
  get url(): string {
    return `http://${this.host}`;
  }

  /** The endpoint by address, for clients outside the sandboxes (the event source's poller). */
  get loopbackUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  route(routes: AwsEndpointRoutes): void {
    this.#routes = routes;
  }

  /**
   * Makes a service unreachable for some functions (by logical id) until the returned function
   * is called: their calls are still checked, then the connection drops, as when a store is away.
   */
  interrupt(service: AwsCall['service'], logicalIds: readonly string[]): () => void {
    const set = this.#interrupted.get(service) ?? new Set<string>();
    for (const id of logicalIds) set.add(id);
    this.#interrupted.set(service, set);
    return () => {
      for (const id of logicalIds) set.delete(id);
    };
  }

  async stop(): Promise<void> {
    this.#agent.destroy();
    await Promise.all(
      this.#servers.map((server) => {
        server.closeAllConnections();
        return new Promise<void>((resolve) => server.close(() => resolve()));
      }),
    );
  }

  async #serve(request: IncomingMessage, response: ServerResponse, secure: boolean): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const routes = this.#routes;
    if (!routes) return void response.writeHead(503).end();
    if (
      secure &&
      request.method === 'PUT' &&
      routes.responses.receive(request.url ?? '', body.toString('utf8'))
    )
      return void response.writeHead(200).end();

    const scope = credentialScope(request.headers.authorization);
    const caller = scope ? routes.lambda.byAccessKey(scope.accessKeyId) : undefined;
    if (!scope || !caller) {
      routes.ledger.problem(
        new RehearsalProblem(
          'iam',
          `a call reached the AWS endpoint signed by no function's role (${request.headers['x-amz-target'] ?? request.url})`,
        ),
      );
      return sendError(
        response,
        403,
        'UnrecognizedClientException',
        'The security token included in the request is invalid.',
      );
    }
    const where = `function ${caller.displayName}`;
    if (scope.region !== routes.callContext.region) {
      routes.ledger.problem(
        new RehearsalProblem(
          'function',
          `${where} signed a call for region ${scope.region}; its stack is in ${routes.callContext.region}, so the call would not find its resources`,
        ),
      );
      return sendError(
        response,
        400,
        'UnrecognizedClientException',
        `signed for ${scope.region}, not ${routes.callContext.region}`,
      );
    }
    const url = new URL(request.url ?? '/', 'https://aws');
    const call = isIotSigningName(scope.service)
      ? readIotCall(scope.service, request.method ?? 'GET', url, routes.callContext)
      : scope.service === 'lambda'
        ? readLambdaCall(
            request.method ?? 'GET',
            url,
            request.headers,
            body.toString('utf8'),
            routes.callContext,
          )
        : readAwsCall(request.headers, body.toString('utf8'), routes.callContext);
    if ('unreadable' in call) {
      routes.ledger.problem(
        new RehearsalProblem('iam', `${where} made a call the rehearsal cannot check: ${call.unreadable}`),
      );
      return sendError(response, 400, 'UnknownOperationException', call.unreadable);
    }
    const principal = routes.lambda.principal(caller);
    for (const access of call.accesses) {
      const decision = await routes.iam.authorize(principal, access);
      if (!decision.allowed) {
        const { account, partition } = routes.callContext;
        const message = `User: arn:${partition}:sts::${account}:assumed-role/${caller.roleName}/${caller.functionName} is not authorized to perform: ${access.action} on resource: ${access.resource} because ${decision.reason}`;
        if (call.service === 'iot' || call.service === 'iotdata' || call.service === 'lambda')
          return sendRestAnswer(response, {
            status: 403,
            errorType: call.service === 'iotdata' ? 'ForbiddenException' : 'AccessDeniedException',
            body: { message },
          });
        return sendError(
          response,
          400,
          'AccessDeniedException',
          message,
          call.service === 'sqs' ? { 'x-amzn-query-error': 'AccessDenied;Sender' } : {},
        );
      }
    }
    if (this.#interrupted.get(call.service)?.has(caller.logicalId)) {
      this.dropped += 1;
      return void response.destroy();
    }
    if (call.service === 'states') {
      const answer = await routes.states.serve(call.operation, call.input);
      response.writeHead(answer.status, { 'content-type': jsonType });
      return void response.end(JSON.stringify(answer.body));
    }
    if (call.service === 'iot' || call.service === 'iotdata')
      return sendRestAnswer(response, routes.iot.serve(call, body, caller.displayName));
    if (call.service === 'lambda') return sendRestAnswer(response, invokeLater(routes.lambda, call));
    this.#forward(routes.upstream[call.service], request, body, response);
  }

  #forward(upstream: string, request: IncomingMessage, body: Buffer, response: ServerResponse): void {
    const target = new URL(upstream);
    const outgoing = httpRequest(
      {
        hostname: target.hostname,
        port: target.port,
        path: request.url,
        method: request.method,
        headers: { ...request.headers, host: target.host },
        agent: this.#agent,
      },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    // the emulator is away: the function sees the connection drop, as it would a store that is
    outgoing.on('error', () => response.destroy());
    outgoing.end(body);
  }
}

function sendError(
  response: ServerResponse,
  status: number,
  type: string,
  message: string,
  headers: Record<string, string> = {},
) {
  response.writeHead(status, { 'content-type': jsonType, ...headers });
  response.end(JSON.stringify({ __type: `com.amazon.coral.service#${type}`, message, Message: message }));
}

/** An answer of a REST-JSON service (IoT): its status, and its error type in `x-amzn-ErrorType` when it is an error. */
function sendRestAnswer(
  response: ServerResponse,
  answer: { readonly status: number; readonly errorType?: string; readonly body: unknown },
) {
  response.writeHead(answer.status, {
    'content-type': 'application/json',
    ...(answer.errorType ? { 'x-amzn-errortype': answer.errorType } : {}),
  });
  response.end(JSON.stringify(answer.body));
}
