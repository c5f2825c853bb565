import { randomUUID } from 'node:crypto';
import type { AwsCall } from './aws-requests.ts';
import type { FunctionDefinition } from './function-definitions.ts';
import type { IamCheck } from './iam-check.ts';
import { type ConnectAnswer, invalidAnswer, policiesOf } from './iot-answers.ts';
import { type ConnectionBroker, IotConnection, type IotMessage } from './iot-connection.ts';
import { describeEndpoint } from './iot-endpoint.ts';
import { type IotAuthorizerModel, type IotModel, type TopicRuleModel, topicMatches } from './iot-model.ts';
import type { PublishInput } from './iot-requests.ts';
import { LambdaInvocationError, type LambdaService } from './lambda-service.ts';

export type { IotConnection, IotMessage } from './iot-connection.ts';

import type { RehearsalLedger } from './ledger.ts';
import { RehearsalProblem } from './problems.ts';

export type IotCoreDeps = {
  readonly model: IotModel;
  readonly lambda: LambdaService;
  readonly iam: IamCheck;
  readonly ledger: RehearsalLedger;
  readonly partition: string;
  readonly region: string;
  readonly account: string;
  readonly iotDataHost: string;
  readonly onLog: (source: string, line: string) => void;
};

/** What an MQTT client presents at CONNECT. */
export type ConnectRequest = {
  readonly clientId: string;
  readonly username: string;
  readonly password: string;
};

export type ConnectOutcome =
  | { readonly connected: true; readonly connection: IotConnection }
  | { readonly connected: false; readonly reason: string };

/** What the rehearsal's IoT answers an HTTP call with. */
export type IotAnswer = {
  readonly status: number;
  readonly body: unknown;
  readonly errorType?: string;
};

const maxPayloadBytes = 128 * 1024;

/**
 * AWS IoT Core as the rehearsal runs it: the template's custom authorizers decide who connects
 * (the function invoked as IoT invokes it, if its resource policy lets IoT), the policies they
 * answer are judged by the same IAM evaluator, the data plane's Publish (checked against the
 * caller's role first, by the AWS endpoint) reaches subscribers and keeps retained messages,
 * and lifecycle events go through the template's topic rules to their functions, each
 * invocation checked against the function's resource policy for the rule. No MQTT is spoken:
 * connections are made by the drive, as a host's would be.
 */
export class IotCore implements ConnectionBroker {
  readonly published: IotMessage[] = [];
  readonly #deps: IotCoreDeps;
  readonly #retained = new Map<string, IotMessage>();
  readonly #connections = new Set<IotConnection>();
  readonly #versions = new Map<string, number>();
  readonly #pending = new Set<Promise<void>>();

  constructor(deps: IotCoreDeps) {
    this.#deps = deps;
  }

  arn(resource: string): string {
    const { partition, region, account } = this.#deps;
    return `arn:${partition}:iot:${region}:${account}:${resource}`;
  }

  /** Serves an IoT call the endpoint has read and IAM has allowed. */
  serve(call: AwsCall, payload: Buffer, publisher: string): IotAnswer {
    if (call.operation === 'DescribeEndpoint') {
      const type = (call.input as { endpointType?: string }).endpointType;
      const answer = describeEndpoint(type, this.#deps.iotDataHost);
      if (answer) return { status: 200, body: answer };
      return invalid(`the rehearsal serves the iot:Data-ATS endpoint only, not ${type ?? '(none)'}`);
    }
    const { topic, qos, retain } = call.input as PublishInput;
    if (!topic || /[+#]/.test(topic) || Buffer.byteLength(topic) > 256)
      return invalid(`${JSON.stringify(topic)} is not a topic one can publish to`);
    if (topic.startsWith('$'))
      return { status: 403, errorType: 'ForbiddenException', body: { message: `${topic} is reserved` } };
    if (qos > 1) return invalid(`QoS ${qos}: IoT Core takes 0 or 1`);
    if (payload.length > maxPayloadBytes)
      return {
        status: 413,
        errorType: 'RequestEntityTooLargeException',
        body: { message: 'payload too large' },
      };
    this.publish({ topic, payload, qos, retain, publisher });
    return { status: 200, body: {} };
  }

  /** A message into the broker: kept when retained, handed to subscribers, and to the rules that select it. */
  publish(message: IotMessage): void {
    this.published.push(message);
    if (message.retain) {
      if (message.payload.length === 0) this.#retained.delete(message.topic);
      else this.#retained.set(message.topic, message);
    }
    for (const connection of this.#connections) this.#track(connection.deliver(message));
    for (const rule of this.#deps.model.rules)
      if (rule.enabled && topicMatches(rule.topicFilter, message.topic))
        this.#track(this.#runRule(rule, message));
  }

  retainedMessages(): IotMessage[] {
    return [...this.#retained.values()];
  }

  /**
   * A client connects as IoT lets it: through the custom authorizer its username names
   * (`?x-amz-customauthorizer-name=`), whose answer must allow iot:Connect as its client id.
   */
  async connect(request: ConnectRequest): Promise<ConnectOutcome> {
    const name = new URLSearchParams(request.username.split('?')[1] ?? '').get('x-amz-customauthorizer-name');
    const authorizer = this.#deps.model.authorizers.find((candidate) => candidate.name === name);
    if (!authorizer) return refused(`no custom authorizer is named ${JSON.stringify(name)}`);
    if (!authorizer.active) return refused(`the authorizer ${authorizer.name} is not active`);
    const answer = await this.#askAuthorizer(authorizer, request);
    if ('reason' in answer) return refused(answer.reason);
    const version = (this.#versions.get(request.clientId) ?? -1) + 1;
    const connection = new IotConnection(this, { ...answer, clientId: request.clientId, version });
    if (!(await connection.allows('iot:Connect', `client/${request.clientId}`)))
      return refused(`the policies answered do not allow iot:Connect as client ${request.clientId}`);
    for (const open of this.#connections) if (open.clientId === request.clientId) open.disconnect();
    this.#versions.set(request.clientId, version);
    this.#connections.add(connection);
    this.#lifecycle('connected', connection, version);
    return { connected: true, connection };
  }

  judge(connection: IotConnection, action: string, resource: string) {
    const principal = `arn:${this.#deps.partition}:iot:${this.#deps.region}:${this.#deps.account}:principal/${connection.principalId}`;
    return this.#deps.iam.judge(connection.policies, principal, { action, resource: this.arn(resource) });
  }

  closed(connection: IotConnection, version: number): void {
    if (this.#connections.delete(connection)) this.#lifecycle('disconnected', connection, version);
  }

  /** Waits for the rule invocations and deliveries under way. */
  async settled(): Promise<void> {
    while (this.#pending.size > 0) await Promise.all([...this.#pending]);
  }

  #track(work: Promise<void>): void {
    const tracked = work.catch((error: unknown) =>
      this.#deps.onLog('IoT Core', `could not hand a message on: ${(error as Error).message}`),
    );
    this.#pending.add(tracked);
    void tracked.finally(() => this.#pending.delete(tracked));
  }

  #lifecycle(eventType: 'connected' | 'disconnected', connection: IotConnection, version: number): void {
    const event = {
      clientId: connection.clientId,
      timestamp: Date.now(),
      eventType,
      sessionIdentifier: randomUUID(),
      principalIdentifier: connection.principalId,
      ipAddress: '127.0.0.1',
      versionNumber: version,
      ...(eventType === 'disconnected'
        ? { clientInitiatedDisconnect: true, disconnectReason: 'CLIENT_INITIATED_DISCONNECT' }
        : {}),
    };
    this.publish({
      topic: `$aws/events/presence/${eventType}/${connection.clientId}`,
      payload: Buffer.from(JSON.stringify(event)),
      qos: 1,
      retain: false,
      publisher: 'IoT Core',
    });
  }

  async #askAuthorizer(
    authorizer: IotAuthorizerModel,
    request: ConnectRequest,
  ): Promise<ConnectAnswer | { reason: string }> {
    const { lambda, iam, ledger } = this.#deps;
    const permitted = await iam.authorize(
      { kind: 'service', service: 'iot.amazonaws.com', sourceArn: authorizer.arn, label: 'IoT Core' },
      { action: 'lambda:InvokeFunction', resource: authorizer.fn.arn },
    );
    if (!permitted.allowed) return { reason: `IoT may not invoke ${authorizer.fn.displayName}` };
    const event = {
      signatureVerified: false,
      protocols: ['tls', 'mqtt'],
      protocolData: {
        tls: { serverName: this.#deps.iotDataHost },
        mqtt: {
          username: request.username,
          password: Buffer.from(request.password, 'utf8').toString('base64'),
          clientId: request.clientId,
        },
      },
      connectionMetadata: { id: randomUUID() },
    };
    let answer: unknown;
    try {
      answer = await lambda.invoke(authorizer.fn, event);
    } catch (error) {
      if (!(error instanceof LambdaInvocationError)) throw error;
      return { reason: `the authorizer failed (${error.errorType}): IoT refuses the connection` };
    }
    const problem = invalidAnswer(answer);
    if (problem) {
      ledger.problem(
        new RehearsalProblem(
          'iot',
          `authorizer ${authorizer.fn.displayName}: ${problem}; IoT refuses every connection`,
        ),
      );
      return { reason: problem };
    }
    const { isAuthenticated, principalId } = answer as { isAuthenticated: boolean; principalId: string };
    if (!isAuthenticated) return { reason: 'the authorizer answered isAuthenticated: false' };
    return { principalId, policies: policiesOf(answer) };
  }

  async #runRule(rule: TopicRuleModel, message: IotMessage): Promise<void> {
    const { lambda, iam } = this.#deps;
    const event = JSON.parse(message.payload.toString('utf8')) as unknown;
    for (const fn of rule.functions) {
      const permitted = await iam.authorize(
        {
          kind: 'service',
          service: 'iot.amazonaws.com',
          sourceArn: rule.arn,
          label: `IoT rule ${rule.displayName}`,
        },
        { action: 'lambda:InvokeFunction', resource: fn.arn },
      );
      if (!permitted.allowed) {
        await this.#ruleError(rule, fn);
        continue;
      }
      // the rule's Lambda action invokes asynchronously: a failure is the function's, not the rule's
      await lambda.invoke(fn, event).catch((error: unknown) => {
        if (!(error instanceof LambdaInvocationError)) throw error;
        this.#deps.onLog(`IoT rule ${rule.displayName}`, `${fn.displayName} failed: ${error.message}`);
      });
    }
  }

  /** The rule's error action: IoT writes the failure to its log group with the role it names. */
  async #ruleError(rule: TopicRuleModel, fn: FunctionDefinition): Promise<void> {
    this.#deps.onLog(`IoT rule ${rule.displayName}`, `could not invoke ${fn.displayName}`);
    const log = rule.errorLog;
    if (!log) return;
    const { partition, region, account } = this.#deps;
    const stream = `arn:${partition}:logs:${region}:${account}:log-group:${log.logGroupName}:log-stream:${rule.name}`;
    const principal = {
      kind: 'role' as const,
      roleLogicalId: log.roleLogicalId,
      session: 'iot-rule-error-action',
      label: `IoT rule ${rule.displayName} error action`,
    };
    for (const action of ['logs:CreateLogStream', 'logs:PutLogEvents'])
      await this.#deps.iam.authorize(principal, { action, resource: stream });
  }
}

const refused = (reason: string): ConnectOutcome => ({ connected: false, reason });
const invalid = (message: string): IotAnswer => ({
  status: 400,
  errorType: 'InvalidRequestException',
  body: { message },
});
