import { makeDynamoDBClient, makeSQSClient } from '../../lib/adapters/aws-clients.ts';
import { givenEndpoints, type RunningEmulators, startEmulators } from '../../lib/runtime/emulators.ts';
import type { RunningEventSource } from '../../lib/runtime/event-source.ts';
import { ApiGateway } from './api-gateway.ts';
import { type ApiModel, readApi } from './api-model.ts';
import { type Assembly, readAssembly, resourcesOfType } from './assembly.ts';
import { AwsEndpoint } from './aws-endpoint.ts';
import type { TableKeys } from './aws-requests.ts';
import { CustomResourceResponses, readCustomResources } from './custom-resources.ts';
import { type QueueMapping, readQueueMappings, startQueueMapping } from './event-sources.ts';
import { type FunctionDefinition, readFunctions } from './function-definitions.ts';
import { IamCheck } from './iam-check.ts';
import { TemplatePolicies } from './iam-policies.ts';
import { identitiesOf, type RehearsalEnvironment } from './identities.ts';
import { IotCore } from './iot-core.ts';
import { httpsNamesOf, iotDataHostOf } from './iot-endpoint.ts';
import { readIotModel } from './iot-model.ts';
import { LambdaService } from './lambda-service.ts';
import { RehearsalLedger } from './ledger.ts';
import { RehearsalProblem } from './problems.ts';
import { provisionQueues, provisionTables } from './provision.ts';
import { References } from './references.ts';
import { checkRolesAtCreation } from './static-checks.ts';
import { type MachineDefinition, readMachines, StepFunctionsService } from './step-functions.ts';
import { projectRoot } from './synth.ts';
import { rehearsalCertificate } from './tls-certificate.ts';

export type RehearsalOptions = {
  /** The synthesized cloud assembly (cdk.out). */
  readonly cdkOut: string;
  readonly stackName?: string;
  /** @default the stack's own region, else us-east-1 */
  readonly region?: string;
  /** @default the stack's own account, else 000000000000 */
  readonly account?: string;
  /** The API's port; a free one when 0. */
  readonly port?: number;
  /** Read for AWS_ENDPOINT_URL(_DYNAMODB|_SQS): a service given there is used, not emulated. */
  readonly env?: NodeJS.ProcessEnv;
  /** Execution environments per function at most. @default 4 */
  readonly maxInstances?: number;
  /** A line a function logged, with the function's path in the app. */
  readonly onLog?: (source: string, line: string) => void;
  readonly onProgress?: (line: string) => void;
};

export type RunningRehearsal = {
  /** The API at its stage (`http://127.0.0.1:<port>/v1`). */
  readonly url: string;
  readonly assembly: Assembly;
  readonly environment: RehearsalEnvironment;
  readonly ledger: RehearsalLedger;
  readonly functions: readonly FunctionDefinition[];
  readonly machines: readonly MachineDefinition[];
  readonly mappings: readonly QueueMapping[];
  readonly api: ApiModel | undefined;
  readonly iam: IamCheck;
  readonly references: References;
  readonly endpoint: AwsEndpoint;
  /** IoT Core as the rehearsal runs it: the broker's authorizer, its rules, what was published. */
  readonly iot: IotCore;
  readonly emulators: RunningEmulators;
  stop(): Promise<void>;
};

/** Every rehearsal problem found before anything runs, together. */
export class RehearsalRefused extends Error {
  override name = 'RehearsalRefused';
  readonly problems: readonly RehearsalProblem[];
  constructor(problems: readonly RehearsalProblem[]) {
    super(
      `the stack cannot be rehearsed:\n${problems.map((problem) => `  ${problem.area}: ${problem.message}`).join('\n')}`,
    );
    this.problems = problems;
  }
}

function tableKeysOf(references: References): (tableName: string) => TableKeys | undefined {
  const keys = new Map<string, TableKeys>();
  const hashOf = (schema: unknown) =>
    ((schema ?? []) as Array<{ AttributeName: string; KeyType: string }>).find(
      (key) => key.KeyType === 'HASH',
    )?.AttributeName ?? '';
  for (const type of ['AWS::DynamoDB::Table', 'AWS::DynamoDB::GlobalTable']) {
    for (const [logicalId, resource] of resourcesOfType(references.template, type)) {
      const properties = references.resolve(resource.Properties ?? {}, logicalId) as Record<string, unknown>;
      const indexes = [properties.GlobalSecondaryIndexes, properties.LocalSecondaryIndexes].flatMap(
        (list) => (list ?? []) as Array<{ IndexName: string; KeySchema: unknown }>,
      );
      const identity = references.identity(logicalId);
      keys.set(identity?.ref as string, {
        tableArn: identity?.attributes.Arn as string,
        partitionKey: hashOf(properties.KeySchema),
        indexPartitionKeys: Object.fromEntries(
          indexes.map((index) => [index.IndexName, hashOf(index.KeySchema)]),
        ),
      });
    }
  }
  return (tableName) => keys.get(tableName);
}

/**
 * Where the rehearsal puts a stack (one fake account, the `aws` partition, its endpoint's
 * names), and the stack's references resolved there.
 */
export function stackOnRehearsal(
  assembly: Assembly,
  where: Pick<RehearsalEnvironment, 'region' | 'awsEndpointHost' | 'iotDataHost'> & {
    account?: string | undefined;
  },
): { environment: RehearsalEnvironment; references: References } {
  const environment: RehearsalEnvironment = {
    ...where,
    stackName: assembly.stackName,
    account: where.account ?? assembly.account ?? '000000000000',
    partition: 'aws',
    urlSuffix: 'amazonaws.com',
  };
  return {
    environment,
    references: new References(assembly.template, environment, identitiesOf(assembly.template, environment)),
  };
}

/**
 * The synthesized stack, running: its tables and queues on the emulators, its functions from
 * their bundles, its state machines, its queue's event source and its REST API, every AWS call
 * checked against its IAM policies. Problems found before anything runs are thrown together.
 */
export async function startRehearsal(options: RehearsalOptions): Promise<RunningRehearsal> {
  const progress = options.onProgress ?? (() => undefined);
  const assembly = readAssembly(options.cdkOut, options.stackName);
  const region = options.region ?? assembly.region ?? 'us-east-1';
  const iotDataHost = iotDataHostOf(assembly.stackName, region);
  const certificate = rehearsalCertificate(httpsNamesOf(iotDataHost));
  const endpoint = await AwsEndpoint.listen(certificate);
  const stack: Array<() => Promise<void>> = [() => endpoint.stop()];
  const stopAll = async () => {
    while (stack.length > 0) await stack.pop()?.();
  };
  try {
    const { environment, references } = stackOnRehearsal(assembly, {
      region,
      account: options.account,
      awsEndpointHost: endpoint.host,
      iotDataHost,
    });
    const ledger = new RehearsalLedger();
    const policies = new TemplatePolicies(references);
    const iam = new IamCheck(policies, references, ledger);
    const found: RehearsalProblem[] = [];
    const attempt = <T>(read: () => T, fallback: T): T => {
      try {
        return read();
      } catch (error) {
        if (!(error instanceof RehearsalProblem)) throw error;
        found.push(error);
        return fallback;
      }
    };
    const functions = attempt(() => readFunctions(assembly, references), []);
    const lambda = new LambdaService(functions, {
      region: environment.region,
      iam,
      ledger,
      runtimeDir: projectRoot,
      awsEndpointUrl: endpoint.url,
      https: { port: endpoint.httpsPort, caPem: certificate.caPem },
      maxInstances: options.maxInstances ?? 4,
      onLog: (definition, line) => options.onLog?.(definition.displayName, line),
    });
    stack.push(() => lambda.stop());
    const machines = attempt(() => readMachines(assembly, references, lambda), []);
    const mappings = attempt(() => readQueueMappings(references, lambda), []);
    const api = attempt(() => readApi(references, lambda), undefined);
    const iotModel = attempt(() => readIotModel(references, lambda), { authorizers: [], rules: [] });
    const customResources = attempt(() => readCustomResources(references, lambda), []);
    await checkRolesAtCreation({
      references,
      policies,
      iam,
      ledger,
      functions,
      machines,
      iotRules: iotModel.rules,
    });
    found.push(...ledger.problems);
    if (found.length > 0) throw new RehearsalRefused(found);

    progress('starting the emulators');
    const emulators = await startEmulators({ given: givenEndpoints(options.env ?? process.env) });
    stack.push(() => emulators.stop());
    progress('creating the tables and queues of the template');
    const dynamodb = makeDynamoDBClient(environment, { endpoint: emulators.endpoints.dynamodb });
    const sqs = makeSQSClient(environment, { endpoint: emulators.endpoints.sqs });
    try {
      await provisionTables(dynamodb, references);
      await provisionQueues(sqs, references);
    } finally {
      dynamodb.destroy();
      sqs.destroy();
    }
    const { account, partition } = environment;
    const iot = new IotCore({
      model: iotModel,
      lambda,
      iam,
      ledger,
      partition,
      region,
      account,
      iotDataHost,
      onLog: (source, line) => options.onLog?.(source, line),
    });
    const responses = new CustomResourceResponses();
    endpoint.route({
      lambda,
      iam,
      ledger,
      callContext: { region, account, partition, tableKeys: tableKeysOf(references) },
      upstream: emulators.endpoints,
      states: new StepFunctionsService(machines, lambda, iam),
      iot,
      responses,
    });
    if (customResources.length > 0) {
      progress(
        `creating the custom resources: ${customResources.map((resource) => resource.displayName).join(', ')}`,
      );
      await responses.createAll(customResources, { lambda, references, ledger });
    }
    for (const mapping of mappings.filter((candidate) => candidate.enabled)) {
      progress(`starting the event source of ${mapping.fn.displayName}`);
      const running: RunningEventSource = await startQueueMapping(mapping, {
        lambda,
        iam,
        ledger,
        region,
        awsEndpointUrl: endpoint.loopbackUrl,
        onError: (error) => options.onLog?.(`${mapping.fn.displayName} event source`, error.message),
      });
      stack.push(() => running.stop());
    }
    let url = '';
    if (api) {
      const gateway = new ApiGateway({ api, lambda, iam, ledger, region, account, partition });
      url = await gateway.listen(options.port ?? 0);
      stack.push(() => gateway.stop());
    }
    return {
      url,
      assembly,
      environment,
      ledger,
      functions,
      machines,
      mappings,
      api,
      iam,
      references,
      endpoint,
      iot,
      emulators,
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}
