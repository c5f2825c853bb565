import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { AssetHashType, DockerImage, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import type { ITableV2 } from 'aws-cdk-lib/aws-dynamodb';
import type { IEventBus } from 'aws-cdk-lib/aws-events';
import { ArnPrincipal, type IRole, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, Code, Function as LambdaFunction, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { IStateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { accessesOf } from '../server/functions/spec.ts';
import type { FunctionSpec } from '../server/functions/table.ts';
import { configEnvironment, type MeshConfig, signalEnvironment } from '../server/setup/config.ts';
import { consumerTimeoutSeconds } from '../server/setup/resources.ts';
import { assertLocalEsbuild, functionsDir, SharedFunctionBundles } from './bundling.ts';
import { acknowledgeGrantWildcards, grantAccess } from './grants.ts';
import { pascalCase, throwIfProblems } from './names.ts';

/** Powertools reads these; they match lib/server/setup/observability.ts so local and deployed metrics agree. */
export const powertoolsServiceName = 'mesh';
export const metricsNamespace = 'Mesh';

export type MeshFunctionsProps = {
  /** One function and one role per entry. */
  readonly specs: readonly FunctionSpec[];
  readonly inventoryTable: ITableV2;
  readonly identityTable: ITableV2;
  readonly controlQueue: IQueue;
  readonly deadLetterQueue: IQueue;
  /** The agent's executables (release-bucket.ts). */
  readonly releaseBucket: IBucket;
  /** The release keys a published release must be signed by (MESH_RELEASE_KEYS). @default none: no release is taken */
  readonly releaseKeys?: readonly string[];
  /**
   * Where the handler files are.
   * @default functions/ at the project root
   */
  readonly functionsDir?: string;
  /** @default 'INFO' */
  readonly logLevel?: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
  /** @default RetentionDays.ONE_MONTH */
  readonly logRetention?: RetentionDays;
};

/** Never run: asset bundling names an image, but the local bundling always succeeds or throws. */
const noDockerImage = DockerImage.fromRegistry('mesh-bundles-locally-never-in-docker');

const lambdaLimits = { timeoutSeconds: [1, 900], memoryMb: [128, 10_240] } as const;

/** The timeout a spec runs with: its own, else the queue consumer's or ten seconds. */
export function timeoutOf(spec: FunctionSpec): number {
  return spec.timeoutSeconds ?? (spec.trigger === 'queue' ? consumerTimeoutSeconds : 10);
}

/** Everything wrong with a manifest, in one list. */
function manifestProblems(specs: readonly FunctionSpec[], dir: string): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const spec of specs) {
    if (seen.has(spec.name)) problems.push(`function ${spec.name} is listed twice`);
    seen.add(spec.name);
    if (!/^[a-z][a-z0-9-]*$/.test(spec.name)) problems.push(`function name ${spec.name} is not kebab-case`);
    else if (!existsSync(join(dir, `${spec.name}.ts`)))
      problems.push(`function ${spec.name} has no handler file functions/${spec.name}.ts`);
    const timeout = timeoutOf(spec);
    const [minTimeout, maxTimeout] = lambdaLimits.timeoutSeconds;
    if (timeout < minTimeout || timeout > maxTimeout)
      problems.push(`function ${spec.name} timeout ${timeout}s is outside ${minTimeout}–${maxTimeout}s`);
    const memory = spec.memoryMb ?? 256;
    const [minMemory, maxMemory] = lambdaLimits.memoryMb;
    if (memory < minMemory || memory > maxMemory)
      problems.push(`function ${spec.name} memory ${memory} MB is outside ${minMemory}–${maxMemory} MB`);
    if (spec.trigger === 'flow' && spec.access.includes('pushFlow:start'))
      problems.push(`flow function ${spec.name} may not start the push flow it runs in`);
    // a push's end is told when its flow ends, by whoever started the flow
    if (spec.access.includes('pushFlow:start') && !spec.access.includes('events:put'))
      problems.push(`function ${spec.name} starts the push flow but cannot put its event (events:put)`);
    if (spec.trigger === 'queue' && !spec.access.includes('control:consume'))
      problems.push(`queue function ${spec.name} lacks control:consume`);
    if (
      spec.reservedConcurrency !== undefined &&
      !(Number.isInteger(spec.reservedConcurrency) && spec.reservedConcurrency >= 1)
    )
      problems.push(
        `function ${spec.name} reservedConcurrency ${spec.reservedConcurrency} is not a whole number of at least 1`,
      );
    if (new Set(spec.access).size !== spec.access.length)
      problems.push(`function ${spec.name} lists an access twice`);
  }
  const consumers = specs.filter((spec) => spec.trigger === 'queue').map((spec) => spec.name);
  if (consumers.length > 1)
    problems.push(`the control queue has one consumer, but ${consumers.join(', ')} are all trigger 'queue'`);
  for (const trigger of ['broker-authorizer', 'broker-lifecycle'] as const) {
    const named = specs.filter((spec) => spec.trigger === trigger).map((spec) => spec.name);
    if (named.length > 1)
      problems.push(`the broker has one ${trigger}, but ${named.join(', ')} are all trigger '${trigger}'`);
  }
  return problems;
}

/**
 * Every function of the manifest as a Lambda function (nodejs24.x, arm64, minified ESM with
 * source maps, all bundled by one esbuild call: bundling.ts; tracing on), each with its own role
 * granting exactly the access its spec lists.
 */
export class MeshFunctions extends Construct {
  public readonly functions: ReadonlyMap<string, LambdaFunction>;
  public readonly roles: ReadonlyMap<string, IRole>;
  private readonly specs: readonly FunctionSpec[];

  constructor(scope: Construct, id: string, props: MeshFunctionsProps) {
    super(scope, id);
    const dir = props.functionsDir ?? functionsDir;
    throwIfProblems('MeshFunctions', manifestProblems(props.specs, dir));
    assertLocalEsbuild();
    this.specs = props.specs;

    const logLevel = props.logLevel ?? 'INFO';
    const { AWS_REGION: _reservedInLambda, ...environment } = configEnvironment({
      region: Stack.of(this).region,
      inventoryTable: props.inventoryTable.tableName,
      identityTable: props.identityTable.tableName,
      controlQueueUrl: props.controlQueue.queueUrl,
      deadLetterQueueUrl: props.deadLetterQueue.queueUrl,
      releaseKeys: [...(props.releaseKeys ?? [])],
      releaseBucket: props.releaseBucket.bucketName,
      logLevel,
    });
    const functions = new Map<string, LambdaFunction>();
    const roles = new Map<string, IRole>();
    const bundles = new SharedFunctionBundles(
      dir,
      props.specs.map((spec) => spec.name),
    );
    for (const spec of props.specs) {
      const id = pascalCase(spec.name);
      const role = new Role(this, `${id}Role`, {
        assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
        description: `mesh ${spec.name}: ${spec.purpose}`.slice(0, 1000),
      });
      const logGroup = new LogGroup(this, `${id}Logs`, {
        retention: props.logRetention ?? RetentionDays.ONE_MONTH,
        removalPolicy: RemovalPolicy.DESTROY,
      });
      logGroup.grantWrite(role);
      const fn = new LambdaFunction(this, id, {
        code: Code.fromAsset(dir, {
          assetHashType: AssetHashType.OUTPUT,
          bundling: {
            image: noDockerImage,
            local: bundles.bundlingFor(spec.name),
            // The CDK caches staged assets by their options, and a local bundling is not among
            // what it compares: without the name here, every function would get the first one's code.
            environment: { MESH_FUNCTION: spec.name },
          },
        }),
        handler: 'index.handler',
        runtime: Runtime.NODEJS_24_X,
        architecture: Architecture.ARM_64,
        timeout: Duration.seconds(timeoutOf(spec)),
        memorySize: spec.memoryMb ?? 256,
        ...(spec.reservedConcurrency !== undefined
          ? { reservedConcurrentExecutions: spec.reservedConcurrency }
          : {}),
        role,
        logGroup,
        tracing: Tracing.ACTIVE,
        description: `mesh ${spec.name}: ${spec.purpose}`.slice(0, 256),
        environment: {
          ...environment,
          POWERTOOLS_SERVICE_NAME: powertoolsServiceName,
          POWERTOOLS_METRICS_NAMESPACE: metricsNamespace,
          POWERTOOLS_LOG_LEVEL: logLevel,
          NODE_OPTIONS: '--enable-source-maps',
        },
      });
      for (const access of accessesOf(spec)) grantAccess(access, role, props);
      acknowledgeGrantWildcards(role, spec, props.releaseBucket);
      functions.set(spec.name, fn);
      roles.set(spec.name, role);
    }
    this.functions = functions;
    this.roles = roles;
  }

  /** The function built for a manifest entry; throws when there is none. */
  get(name: string): LambdaFunction {
    const fn = this.functions.get(name);
    if (!fn) throw new Error(`MeshFunctions: no function named ${name} in the manifest`);
    return fn;
  }

  /** The specs with the given trigger, in manifest order. */
  withTrigger(trigger: FunctionSpec['trigger']): readonly FunctionSpec[] {
    return this.specs.filter((spec) => spec.trigger === trigger);
  }

  /** Grants `pushFlow:start` to the functions that list it, and tells them where the flow is. */
  connectPushFlow(stateMachine: IStateMachine): void {
    for (const spec of this.specs) {
      if (!spec.access.includes('pushFlow:start')) continue;
      const fn = this.get(spec.name);
      stateMachine.grantStartSyncExecution(fn);
      fn.addEnvironment('MESH_PUSH_FLOW_ARN', stateMachine.stateMachineArn);
    }
  }

  /** Grants `rolloutFlow:start` to the functions that list it, and tells them where the flow is. */
  connectRolloutFlow(stateMachine: IStateMachine): void {
    for (const spec of this.specs) {
      if (!spec.access.includes('rolloutFlow:start')) continue;
      const fn = this.get(spec.name);
      stateMachine.grantStartExecution(fn);
      // resume asks whether an execution still steps a rollout before it starts one again
      stateMachine.grant(fn, 'states:ListExecutions');
      fn.addEnvironment('MESH_ROLLOUT_FLOW_ARN', stateMachine.stateMachineArn);
    }
  }

  /** Grants `applyFlow:start` to the functions that list it, and tells them where the flow is. */
  connectApplyFlow(stateMachine: IStateMachine): void {
    for (const spec of this.specs) {
      if (!spec.access.includes('applyFlow:start')) continue;
      const fn = this.get(spec.name);
      stateMachine.grantStartExecution(fn);
      fn.addEnvironment('MESH_APPLY_FLOW_ARN', stateMachine.stateMachineArn);
    }
  }

  /**
   * Grants `pushRun:invoke` on the `invoke`-triggered push-run function to the functions that
   * list it, and tells them its ARN; and lets push-run invoke itself, to hand a push on.
   */
  connectPushRunner(): void {
    const [runner] = this.withTrigger('invoke');
    if (!runner) return;
    const fn = this.get(runner.name);
    // by the ARN it was invoked by (lib/server/api/handlers/push-tasks.ts): a statement on its
    // own role naming its own ARN would be a cycle in the template, its function's policy is not
    if (fn.role)
      fn.addPermission('InvokedByItself', {
        principal: new ArnPrincipal(fn.role.roleArn),
        action: 'lambda:InvokeFunction',
      });
    for (const spec of this.specs) {
      if (!spec.access.includes('pushRun:invoke')) continue;
      const caller = this.get(spec.name);
      // the function itself, not its versions (`:*`): it is invoked unqualified
      caller.addToRolePolicy(
        new PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: [fn.functionArn] }),
      );
      caller.addEnvironment('MESH_PUSH_RUNNER_ARN', fn.functionArn);
    }
  }

  /** Lets the functions that list `events:put` put events on the bus alone, and tells them its name. */
  connectEvents(bus: IEventBus): void {
    for (const spec of this.specs) {
      if (!spec.access.includes('events:put')) continue;
      const fn = this.get(spec.name);
      bus.grantPutEventsTo(fn);
      fn.addEnvironment('MESH_EVENT_BUS_NAME', bus.eventBusName);
    }
  }

  /** Tells every function where the broker is, and the signal's publishers where to publish. */
  connectSignal(signal: NonNullable<MeshConfig['signal']>): void {
    for (const spec of this.specs) {
      const fn = this.get(spec.name);
      for (const [name, value] of Object.entries(signalEnvironment(signal))) fn.addEnvironment(name, value);
    }
  }
}
