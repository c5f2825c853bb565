import { Duration, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { DefinitionBody, Pass, StateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { describe, expect, it } from 'vitest';
import { lostMessagesMetric, MeshAlarms, signalsNotPublishedMetric } from '../../lib/deploy/alarms.ts';
import { ControlPlaneApi } from '../../lib/deploy/api.ts';
import { ControlConsumer } from '../../lib/deploy/control-consumer.ts';
import { ControlQueue } from '../../lib/deploy/control-queue.ts';
import { MeshFunctions } from '../../lib/deploy/functions.ts';
import { PushStateMachine } from '../../lib/deploy/push-flow.ts';
import { ReleaseBucket } from '../../lib/deploy/release-bucket.ts';
import { SignalBroker } from '../../lib/deploy/signal-broker.ts';
import { MeshTables } from '../../lib/deploy/tables.ts';
import type { FunctionSpec } from '../../lib/server/functions/table.ts';
import { consumerTimeoutSeconds } from '../../lib/server/setup/resources.ts';
import { fixtureAslPath, fixtureFunctionsDir, fixtureSpecs, unused } from './fixtures/manifest.ts';

const hostAuthorizerName = 'host-authorizer';
const route = (path: string) => ({
  method: 'GET' as const,
  path,
  auth: 'operator' as const,
  role: 'viewer' as const,
});

import { allowed, fixtureStack, logicalId, meshFunctionsOf, problemsOf, unbundledApp } from './support.ts';

const { stack, template } = fixtureStack();
const roleOf = (name: string) => logicalId(stack, stack.functions.roles.get(name) as never);
const functionId = (name: string) => logicalId(stack, stack.functions.get(name));
const inventoryArn = () =>
  JSON.stringify({ 'Fn::GetAtt': [logicalId(stack, stack.tables.inventory), 'Arn'] });
const identityArn = () => JSON.stringify({ 'Fn::GetAtt': [logicalId(stack, stack.tables.identity), 'Arn'] });

describe('MeshTables', () => {
  it('keeps data by default: deletion protection, retained, point-in-time recovery, on demand', () => {
    template.hasResource('AWS::DynamoDB::GlobalTable', {
      DeletionPolicy: 'Retain',
      Properties: Match.objectLike({
        BillingMode: 'PAY_PER_REQUEST',
        Replicas: [
          Match.objectLike({
            DeletionProtectionEnabled: true,
            PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
          }),
        ],
      }),
    });
  });

  it('lets the tables go with the stack when told to', () => {
    const scope = new Stack(unbundledApp(), 'Trial');
    new MeshTables(scope, 'Tables', { retain: false });
    const trial = Template.fromStack(scope);
    trial.allResources('AWS::DynamoDB::GlobalTable', { DeletionPolicy: 'Delete' });
    trial.hasResourceProperties('AWS::DynamoDB::GlobalTable', {
      Replicas: [Match.objectLike({ DeletionProtectionEnabled: false })],
    });
  });
});

describe('ControlQueue', () => {
  it('holds visibility at six times a long consumer timeout, with SSE and TLS enforced', () => {
    const scope = new Stack(unbundledApp(), 'Queue');
    new ControlQueue(scope, 'Control', { consumerTimeout: Duration.seconds(100) });
    const queue = Template.fromStack(scope);
    queue.hasResourceProperties('AWS::SQS::Queue', {
      FifoQueue: true,
      VisibilityTimeout: 600,
      SqsManagedSseEnabled: true,
      RedrivePolicy: Match.objectLike({ maxReceiveCount: 50 }),
    });
    queue.hasResourceProperties('AWS::SQS::QueuePolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
  });

  it('keeps the stack consumer timeout six times under the visibility', () => {
    template.hasResourceProperties('AWS::SQS::Queue', {
      RedrivePolicy: Match.anyValue(),
      VisibilityTimeout: 6 * consumerTimeoutSeconds,
    });
  });
});

describe('MeshFunctions', () => {
  it('builds one nodejs24.x arm64 function, traced, per manifest entry', () => {
    const functions = meshFunctionsOf(template);
    expect(functions).toHaveLength(fixtureSpecs.length);
    for (const [, fn] of functions) {
      expect(fn.Properties).toMatchObject({
        Runtime: 'nodejs24.x',
        Architectures: ['arm64'],
        TracingConfig: { Mode: 'Active' },
        Handler: 'index.handler',
      });
    }
  });

  it('passes configuration and Powertools settings by environment, never AWS_REGION', () => {
    for (const [, fn] of meshFunctionsOf(template)) {
      expect(fn.Properties.Environment).toEqual({
        Variables: expect.objectContaining({
          MESH_INVENTORY_TABLE: { Ref: logicalId(stack, stack.tables.inventory) },
          MESH_IDENTITY_TABLE: { Ref: logicalId(stack, stack.tables.identity) },
          MESH_CONTROL_QUEUE_URL: expect.anything(),
          MESH_DEAD_LETTER_QUEUE_URL: expect.anything(),
          MESH_SIGNAL_BROKER_URL: expect.anything(),
          MESH_SIGNAL_AUTHORIZER: 'Mesh-signal',
          MESH_IOT_DATA_ENDPOINT: expect.anything(),
          POWERTOOLS_SERVICE_NAME: 'mesh',
          POWERTOOLS_METRICS_NAMESPACE: 'Mesh',
          POWERTOOLS_LOG_LEVEL: 'INFO',
          NODE_OPTIONS: '--enable-source-maps',
        }),
      });
    }
    for (const [, fn] of meshFunctionsOf(template)) {
      const { Variables } = fn.Properties.Environment as { Variables: Record<string, unknown> };
      expect(Object.keys(Variables)).not.toContain('AWS_REGION');
    }
  });

  it('tells only the functions that start the push flow where it is', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      Description: Match.stringLikeRegexp('^mesh operator-read'),
      Environment: { Variables: Match.objectLike({ MESH_PUSH_FLOW_ARN: Match.anyValue() }) },
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Description: Match.stringLikeRegexp('^mesh host-read'),
      Environment: { Variables: Match.objectLike({ MESH_PUSH_FLOW_ARN: Match.absent() }) },
    });
  });

  it('gives every function its own role', () => {
    const roles = fixtureSpecs.map((spec) => roleOf(spec.name));
    expect(new Set(roles).size).toBe(fixtureSpecs.length);
    for (const spec of fixtureSpecs) {
      template.hasResourceProperties('AWS::Lambda::Function', {
        Role: { 'Fn::GetAtt': [roleOf(spec.name), 'Arn'] },
        Description: Match.stringLikeRegexp(`^mesh ${spec.name}:`),
      });
    }
  });

  it('grants the host authorizer node keys alone: nothing on the inventory, the queues or the flow', () => {
    const actions = allowed(template, roleOf('host-authorizer'));
    expect(actions.get('dynamodb:BatchGetItem')).toEqual([identityArn()]);
    expect([...actions.keys()].filter((action) => action.startsWith('dynamodb:'))).toEqual([
      'dynamodb:BatchGetItem',
    ]);
    expect([...actions.keys()].filter((action) => /^(sqs|states):/.test(action))).toEqual([]);
  });

  it('grants writes without reads to a writer', () => {
    const actions = allowed(template, roleOf('enrol-claim'));
    expect(actions.get('dynamodb:PutItem')).toEqual([inventoryArn()]);
    expect(actions.has('dynamodb:GetItem')).toBe(false);
    expect(actions.has('dynamodb:Query')).toBe(false);
  });

  it('grants proofs:write PutItem on the inventory for proof# partition keys only, and nothing else there but the refusals’ counters', () => {
    const scope = new Stack(unbundledApp(), 'Proofs');
    const tables = new MeshTables(scope, 'Tables');
    const queues = new ControlQueue(scope, 'Queue');
    const functions = new MeshFunctions(scope, 'Functions', {
      specs: [
        {
          name: 'host-read',
          purpose: 'a host route',
          access: ['proofs:write'],
          trigger: 'api',
          route: route('/x'),
          handler: unused,
        },
      ],
      functionsDir: fixtureFunctionsDir,
      inventoryTable: tables.inventory,
      identityTable: tables.identity,
      controlQueue: queues.queue,
      deadLetterQueue: queues.deadLetterQueue,
      releaseBucket: new ReleaseBucket(scope, 'Releases').bucket,
    });
    const proofs = Template.fromStack(scope);
    const idOf = (construct: { node: { defaultChild?: unknown } }) =>
      scope.resolve((construct.node.defaultChild as { logicalId: string }).logicalId) as string;
    const inventory = { 'Fn::GetAtt': [idOf(tables.inventory), 'Arn'] };

    const actions = allowed(proofs, idOf(functions.roles.get('host-read') as never));

    // every API function counts the requests it refuses (audit:refusals, docs/audit.md)
    expect([...actions.keys()].filter((action) => action.startsWith('dynamodb:')).sort()).toEqual([
      'dynamodb:PutItem',
      'dynamodb:UpdateItem',
    ]);
    expect(actions.get('dynamodb:PutItem')).toEqual([JSON.stringify(inventory)]);
    expect(actions.get('dynamodb:UpdateItem')).toEqual([JSON.stringify(inventory)]);
    proofs.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Allow',
            Action: 'dynamodb:PutItem',
            Resource: inventory,
            Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['proof#*'] } },
          }),
          Match.objectLike({
            Effect: 'Allow',
            Action: 'dynamodb:UpdateItem',
            Resource: inventory,
            Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['audit#refused#*'] } },
          }),
        ]),
      },
    });
  });

  it('grants the consumer its queue and the dead-letter queue, and nothing on identity', () => {
    const actions = allowed(template, roleOf('control-consume'));
    const control = JSON.stringify({ 'Fn::GetAtt': [logicalId(stack, stack.control.queue), 'Arn'] });
    const dead = JSON.stringify({ 'Fn::GetAtt': [logicalId(stack, stack.control.deadLetterQueue), 'Arn'] });
    expect(actions.get('sqs:ReceiveMessage')).toEqual([control]);
    expect(actions.get('sqs:ChangeMessageVisibility')).toEqual([control]);
    expect(actions.get('sqs:SendMessage')).toEqual([dead]);
    expect(JSON.stringify([...actions.values()])).not.toContain(logicalId(stack, stack.tables.identity));
  });

  it('grants StartSyncExecution only to functions that list pushFlow:start', () => {
    const machine = JSON.stringify({ Ref: logicalId(stack, stack.pushFlow?.stateMachine as never) });
    expect(allowed(template, roleOf('operator-read')).get('states:StartSyncExecution')).toEqual([machine]);
    for (const spec of fixtureSpecs.filter((s) => !s.access.includes('pushFlow:start'))) {
      expect(allowed(template, roleOf(spec.name)).has('states:StartSyncExecution')).toBe(false);
    }
  });

  it('reports every problem with a manifest together, before building anything', () => {
    const scope = new Stack(unbundledApp(), 'Bad');
    const tables = new MeshTables(scope, 'Tables');
    const queues = new ControlQueue(scope, 'Queue');
    const bad: FunctionSpec[] = [
      { name: 'missing-file', purpose: 'x', access: [], trigger: 'api', route: route('/a'), handler: unused },
      { name: 'push-step', purpose: 'x', access: ['pushFlow:start'], trigger: 'flow', handler: unused },
      {
        name: 'control-consume',
        purpose: 'x',
        access: [],
        trigger: 'queue',
        timeoutSeconds: 901,
        handler: unused,
      },
      {
        name: 'host-read',
        purpose: 'x',
        access: ['control:consume'],
        trigger: 'queue',
        memoryMb: 64,
        handler: unused,
      },
      { name: 'host-read', purpose: 'x', access: [], trigger: 'api', route: route('/b'), handler: unused },
    ];
    const problems = problemsOf(
      () =>
        new MeshFunctions(scope, 'Functions', {
          specs: bad,
          functionsDir: fixtureFunctionsDir,
          inventoryTable: tables.inventory,
          identityTable: tables.identity,
          controlQueue: queues.queue,
          deadLetterQueue: queues.deadLetterQueue,
          releaseBucket: new ReleaseBucket(scope, 'Releases').bucket,
        }),
    );
    expect(problems).toEqual([
      'function missing-file has no handler file functions/missing-file.ts',
      'flow function push-step may not start the push flow it runs in',
      'function push-step starts the push flow but cannot put its event (events:put)',
      'function control-consume timeout 901s is outside 1–900s',
      'queue function control-consume lacks control:consume',
      'function host-read memory 64 MB is outside 128–10240 MB',
      'function host-read is listed twice',
      "the control queue has one consumer, but control-consume, host-read are all trigger 'queue'",
    ]);
    expect(scope.node.findAll().some((c) => c instanceof LambdaFunction)).toBe(false);
  });
});

describe('ControlConsumer', () => {
  it('reads batches of 10 with partial batch responses and a maximum concurrency', () => {
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: functionId('control-consume') },
      BatchSize: 10,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: 20 },
    });
    template.resourceCountIs('AWS::Lambda::EventSourceMapping', 1);
  });

  it('refuses a maximum concurrency Lambda does not allow', () => {
    const scope = new Stack(unbundledApp(), 'Consumer');
    const queue = new Queue(scope, 'Queue');
    const consumer = LambdaFunction.fromFunctionName(scope, 'Fn', 'consumer');
    expect(() => new ControlConsumer(scope, 'C', { queue, consumer, maxConcurrency: 1 })).toThrow(
      /maxConcurrency 1 is outside 2–1000/,
    );
  });
});

describe('PushStateMachine', () => {
  it('is an Express state machine logging every event with its data, traced', () => {
    template.hasResourceProperties('AWS::StepFunctions::StateMachine', {
      StateMachineType: 'EXPRESS',
      LoggingConfiguration: Match.objectLike({ Level: 'ALL', IncludeExecutionData: true }),
      TracingConfiguration: { Enabled: true },
    });
  });

  it('fills each <Pascal>FunctionArn placeholder with the ARN of the kebab-case function', () => {
    template.hasResourceProperties('AWS::StepFunctions::StateMachine', {
      DefinitionSubstitutions: { PushStepFunctionArn: { 'Fn::GetAtt': [functionId('push-step'), 'Arn'] } },
    });
  });

  it('lets the state machine invoke only the functions the definition names', () => {
    const role = logicalId(stack, stack.pushFlow?.stateMachine.role as never);
    const invoke = allowed(template, role).get('lambda:InvokeFunction') ?? [];
    expect(invoke.length).toBeGreaterThan(0);
    expect(invoke.every((resource) => resource.includes(functionId('push-step')))).toBe(true);
  });

  it('reports every placeholder and flow function that does not fit, together', () => {
    const scope = new Stack(unbundledApp(), 'Flow');
    const specs: FunctionSpec[] = [
      { name: 'push-step', purpose: 'x', access: [], trigger: 'api', route: route('/c'), handler: unused },
      { name: 'push-idle', purpose: 'x', access: [], trigger: 'flow', handler: unused },
    ];
    const problems = problemsOf(
      () =>
        new PushStateMachine(scope, 'Flow', {
          aslPath: fixtureAslPath,
          specs,
          functionNamed: (name) => LambdaFunction.fromFunctionName(scope, name, name),
        }),
    );
    expect(problems).toEqual([
      `\${PushStepFunctionArn} names push-step, whose trigger is 'api', not 'flow'`,
      `flow function push-idle is not used by the push flow (no \${PushIdleFunctionArn})`,
    ]);
  });

  it('refuses a stack whose definition does not exist, saying where it looked', () => {
    const missing = `${fixtureFunctionsDir}no-such.asl.json`;
    const problems = problemsOf(() => fixtureStack({ pushFlowAslPath: missing }));
    expect(problems).toEqual([
      `the push flow definition ${missing} does not exist`,
      `flow function push-step is not used by the push flow (no \${PushStepFunctionArn})`,
    ]);
  });
});

describe('ControlPlaneApi', () => {
  const method = (httpMethod: string, pathPart: string) => ({ HttpMethod: httpMethod, pathPart });
  const hasMethod = (m: ReturnType<typeof method>, properties: Record<string, unknown>) => {
    const resources = template.findResources('AWS::ApiGateway::Resource', {
      Properties: { PathPart: m.pathPart },
    });
    const [resourceId] = Object.keys(resources);
    template.hasResourceProperties('AWS::ApiGateway::Method', {
      HttpMethod: m.HttpMethod,
      ResourceId: { Ref: resourceId },
      RequestValidatorId: Match.anyValue(),
      ...properties,
    });
  };

  it('signs operator routes with IAM', () => {
    hasMethod(method('GET', '{node}'), {
      AuthorizationType: 'AWS_IAM',
      RequestParameters: { 'method.request.path.node': true },
    });
  });

  it('puts the host authorizer, cached by the proof, in front of host routes', () => {
    hasMethod(method('GET', 'declaration'), {
      AuthorizationType: 'CUSTOM',
      AuthorizerId: { Ref: logicalId(stack, stack.api.authorizer as never) },
    });
    template.hasResourceProperties('AWS::ApiGateway::Authorizer', {
      Type: 'REQUEST',
      IdentitySource: 'method.request.header.Authorization',
      AuthorizerResultTtlInSeconds: 60,
    });
    const [authorizer] = Object.values(template.findResources('AWS::ApiGateway::Authorizer'));
    expect(JSON.stringify(authorizer?.Properties.AuthorizerUri)).toContain(functionId(hostAuthorizerName));
  });

  it('leaves /enrol to its token, with the token budget (test/cdk/api-protection.test.ts has them all)', () => {
    hasMethod(method('POST', 'enrol'), { AuthorizationType: 'NONE' });
    template.hasResourceProperties('AWS::ApiGateway::Stage', {
      TracingEnabled: true,
      AccessLogSetting: Match.objectLike({ DestinationArn: Match.anyValue() }),
      MethodSettings: Match.arrayWith([
        Match.objectLike({ HttpMethod: '*', LoggingLevel: 'ERROR' }),
        Match.objectLike({
          HttpMethod: 'POST',
          ResourcePath: '/~1enrol',
          ThrottlingRateLimit: 5,
          ThrottlingBurstLimit: 10,
        }),
      ]),
    });
  });

  it('validates request parameters and bodies', () => {
    template.hasResourceProperties('AWS::ApiGateway::RequestValidator', {
      ValidateRequestBody: true,
      ValidateRequestParameters: true,
    });
  });

  it('answers its own refusals in the problem shape, and an unreadable store with 503', () => {
    template.hasResourceProperties('AWS::ApiGateway::GatewayResponse', {
      ResponseType: 'DEFAULT_4XX',
      ResponseTemplates: { 'application/json': Match.stringLikeRegexp('"error":\\{"code"') },
    });
    // a throwing authorizer Lambda is AUTHORIZER_CONFIGURATION_ERROR to API Gateway: same 503
    for (const responseType of ['AUTHORIZER_FAILURE', 'AUTHORIZER_CONFIGURATION_ERROR']) {
      template.hasResourceProperties('AWS::ApiGateway::GatewayResponse', {
        ResponseType: responseType,
        StatusCode: '503',
        ResponseParameters: { 'gatewayresponse.header.Retry-After': "'2'" },
        ResponseTemplates: { 'application/json': Match.stringLikeRegexp('"code":"try_again"') },
      });
    }
  });

  it('outputs the API URL', () => {
    template.hasOutput('ApiUrl', { Value: Match.anyValue() });
  });

  it('reports every route that does not fit, together', () => {
    const scope = new Stack(unbundledApp(), 'Routes');
    const api = (name: string, path: string, auth: 'operator' | 'host'): FunctionSpec => ({
      name,
      purpose: 'x',
      access: [],
      trigger: 'api' as const,
      route:
        auth === 'operator' ? { method: 'GET', path, auth, role: 'viewer' } : { method: 'GET', path, auth },
      handler: unused,
    });
    const problems = problemsOf(
      () =>
        new ControlPlaneApi(scope, 'Api', {
          specs: [
            ...fixtureSpecs,
            api('operator-again', '/nodes/{node}', 'operator'),
            api('host-relative', 'relative', 'host'),
            {
              ...(fixtureSpecs.find((spec) => spec.trigger === 'authorizer') as FunctionSpec),
              name: 'second',
            },
          ],
          functionNamed: (name) => LambdaFunction.fromFunctionName(scope, name, name),
          budgets: { host: { rateLimit: 0, burstLimit: 1 } },
        }),
    );
    expect(problems).toEqual([
      'route GET /nodes/{node} is listed twice',
      'route GET relative is not an API Gateway resource path',
      "host routes have one authorizer, but host-authorizer, second are all trigger 'authorizer'",
      'budgets.host needs a positive rateLimit and a whole burstLimit of at least 1',
    ]);
  });

  it('refuses host routes without the host authorizer', () => {
    const problems = problemsOf(() =>
      fixtureStack({ specs: fixtureSpecs.filter((spec) => spec.trigger !== 'authorizer') }),
    );
    expect(problems).toEqual([
      'routes GET /hosts/{node}/declaration need the host authorizer, and none is given',
    ]);
  });
});

describe('SignalBroker', () => {
  it('authorizes hosts with an unsigned IoT custom authorizer whose function only IoT may call, at bounded concurrency', () => {
    template.hasResourceProperties('AWS::IoT::Authorizer', {
      AuthorizerName: 'Mesh-signal',
      AuthorizerFunctionArn: { 'Fn::GetAtt': [functionId('broker-authorizer'), 'Arn'] },
      SigningDisabled: true,
      Status: 'ACTIVE',
    });
    template.hasResourceProperties('AWS::Lambda::Permission', {
      FunctionName: { 'Fn::GetAtt': [functionId('broker-authorizer'), 'Arn'] },
      Principal: 'iot.amazonaws.com',
      SourceArn: { 'Fn::GetAtt': [stack.resolve(stack.signal?.authorizer.logicalId), 'Arn'] },
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Description: Match.stringLikeRegexp('^mesh broker-authorizer'),
      ReservedConcurrentExecutions: 7,
    });
  });

  it('sends every connect and disconnect to the presence function, logging what the rule could not deliver', () => {
    template.hasResourceProperties('AWS::IoT::TopicRule', {
      TopicRulePayload: Match.objectLike({
        Sql: "SELECT * FROM '$aws/events/presence/+/+'",
        Actions: [{ Lambda: { FunctionArn: { 'Fn::GetAtt': [functionId('broker-lifecycle'), 'Arn'] } } }],
        ErrorAction: { CloudwatchLogs: Match.objectLike({ LogGroupName: Match.anyValue() }) },
      }),
    });
    template.hasResourceProperties('AWS::Lambda::Permission', {
      FunctionName: { 'Fn::GetAtt': [functionId('broker-lifecycle'), 'Arn'] },
      Principal: 'iot.amazonaws.com',
    });
  });

  it('lets the push publish on the nodes’ signal topics and nowhere else, and presence write node partitions only', () => {
    const publish = allowed(template, roleOf('push-step')).get('iot:Publish') ?? [];
    expect(publish).toHaveLength(1);
    expect(publish[0]).toContain(':topic/mesh/nodes/*/signal');
    expect(allowed(template, roleOf('operator-read')).has('iot:Publish')).toBe(false);
    const presence = allowed(template, roleOf('broker-lifecycle'));
    expect([...presence.keys()].filter((action) => action.startsWith('dynamodb:')).sort()).toEqual([
      'dynamodb:ConditionCheckItem',
      'dynamodb:UpdateItem',
    ]);
    template.hasResourceProperties('AWS::IAM::Policy', {
      Roles: [{ Ref: roleOf('broker-lifecycle') }],
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['node#*'] } },
          }),
        ]),
      },
    });
  });

  it('refuses a manifest without one broker authorizer and one lifecycle function', () => {
    const problems = problemsOf(
      () =>
        new SignalBroker(new Stack(unbundledApp(), 'Broken'), 'Signal', {
          specs: fixtureSpecs.filter((spec) => !spec.trigger.startsWith('broker-')),
          functionNamed: () => undefined as never,
        }),
    );
    expect(problems).toEqual([
      "needs one 'broker-authorizer' function, found 0",
      "needs one 'broker-lifecycle' function, found 0",
    ]);
  });
});

describe('MeshAlarms', () => {
  it('alarms on any signal the push could not publish', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: signalsNotPublishedMetric.namespace,
      MetricName: 'SignalsNotPublished',
      Dimensions: [{ Name: 'service', Value: 'mesh' }],
      Threshold: 1,
    });
  });

  it('alarms on anything in the dead-letter queue', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [
        {
          Name: 'QueueName',
          Value: { 'Fn::GetAtt': [logicalId(stack, stack.control.deadLetterQueue), 'QueueName'] },
        },
      ],
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
  });

  it('alarms on any lost message, with the dimension Powertools adds', () => {
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: lostMessagesMetric.namespace,
      MetricName: 'LostMessages',
      Dimensions: [{ Name: 'service', Value: 'mesh' }],
      Threshold: 1,
    });
  });

  it('alarms on the first execution of a stepping flow that fails or is aborted, and on its step failing 15 minutes', () => {
    const scope = new Stack(unbundledApp(), 'Flows');
    const machine = new StateMachine(scope, 'RolloutFlow', {
      definitionBody: DefinitionBody.fromChainable(new Pass(scope, 'Step')),
    });
    new MeshAlarms(scope, 'Alarms', {
      deadLetterQueue: new Queue(scope, 'Dead'),
      functions: new Map(),
      stateMachines: new Map([['rollout-flow', machine]]),
      steps: new Map([
        ['rollout-flow', LambdaFunction.fromFunctionName(scope, 'Advance', 'rollout-advance')],
      ]),
    });
    Template.fromStack(scope).hasResourceProperties('AWS::CloudWatch::Alarm', {
      Metrics: Match.arrayWith([
        Match.objectLike({ Expression: 'FILL(failed, 0) + FILL(aborted, 0)' }),
        ...['ExecutionsFailed', 'ExecutionsAborted'].map((metricName) =>
          Match.objectLike({
            MetricStat: Match.objectLike({
              Metric: {
                Namespace: 'AWS/States',
                MetricName: metricName,
                Dimensions: [
                  { Name: 'StateMachineArn', Value: { Ref: Match.stringLikeRegexp('RolloutFlow') } },
                ],
              },
            }),
          }),
        ),
      ]),
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
  });

  it('alarms on errors and throttles of every function, summed in one alarm a function, on the third in 5 minutes', () => {
    const metric = (fn: string, id: string, metricName: string) =>
      Match.objectLike({
        Id: id,
        MetricStat: Match.objectLike({
          Metric: {
            Namespace: 'AWS/Lambda',
            MetricName: metricName,
            Dimensions: [{ Name: 'FunctionName', Value: { Ref: functionId(fn) } }],
          },
        }),
      });
    for (const spec of fixtureSpecs) {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Metrics: Match.arrayWith([
          Match.objectLike({ Expression: 'FILL(errors, 0) + FILL(throttles, 0)' }),
          metric(spec.name, 'errors', 'Errors'),
          metric(spec.name, 'throttles', 'Throttles'),
        ]),
        Threshold: 3,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      });
    }
  });
});
