import { randomBytes } from 'node:crypto';
import type { FunctionDefinition } from './function-definitions.ts';
import type { IamCheck, Principal } from './iam-check.ts';
import { shortId } from './identities.ts';
import type { RehearsalLedger } from './ledger.ts';
import { LambdaInvocationError, SandboxPool } from './sandbox-pool.ts';
import { TaskRoots } from './task-roots.ts';

export { LambdaInvocationError } from './sandbox-pool.ts';

export type Credentials = {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken: string;
};

export type LambdaServiceOptions = {
  readonly region: string;
  readonly iam: IamCheck;
  readonly ledger: RehearsalLedger;
  /** Where `@aws-sdk/*` resolves from, standing in for the runtime's own SDK. */
  readonly runtimeDir: string;
  /** The rehearsal's AWS endpoint, given to every function as AWS_ENDPOINT_URL. */
  readonly awsEndpointUrl: string;
  /** The endpoint's HTTPS listener, where port 443 of `*.aws.localhost` goes, and the CA its certificate chains to. */
  readonly https: { readonly port: number; readonly caPem: string };
  /** Execution environments per function at most (its reserved concurrency when lower). */
  readonly maxInstances: number;
  readonly onLog: (definition: FunctionDefinition, line: string) => void;
};

/**
 * The template's functions, each run from its bundle in fresh Node processes with the
 * template's environment and the variables the Lambda service sets, its role's credentials
 * among them: every SDK call it makes reaches the rehearsal's endpoint signed as that role.
 * A cold start is also when the Lambda service writes the function's logs and traces with its
 * role, so those permissions are checked then.
 */
export class LambdaService {
  readonly definitions: readonly FunctionDefinition[];
  readonly #options: LambdaServiceOptions;
  readonly #pools = new Map<string, SandboxPool>();
  readonly #credentials = new Map<string, Credentials>();
  readonly #byAccessKey = new Map<string, FunctionDefinition>();
  readonly #taskRoots = new TaskRoots();

  constructor(definitions: readonly FunctionDefinition[], options: LambdaServiceOptions) {
    this.definitions = definitions;
    this.#options = options;
    for (const definition of definitions) {
      const credentials = {
        accessKeyId: `ASIA${shortId(`credentials/${definition.logicalId}`, 16).toUpperCase()}`,
        secretAccessKey: randomBytes(30).toString('base64'),
        sessionToken: randomBytes(60).toString('base64'),
      };
      this.#credentials.set(definition.logicalId, credentials);
      this.#byAccessKey.set(credentials.accessKeyId, definition);
    }
  }

  /** The function an ARN names, with or without a version or alias qualifier. */
  byArn(arn: string): FunctionDefinition | undefined {
    const unqualified = arn.replace(/^(arn:[^:]+:lambda:[^:]+:[^:]+:function:[^:]+):.*$/, '$1');
    return this.definitions.find((definition) => definition.arn === unqualified);
  }

  byLogicalId(logicalId: string): FunctionDefinition | undefined {
    return this.definitions.find((definition) => definition.logicalId === logicalId);
  }

  credentials(definition: FunctionDefinition): Credentials {
    return this.#credentials.get(definition.logicalId) as Credentials;
  }

  /** Whose credentials signed a call. */
  byAccessKey(accessKeyId: string): FunctionDefinition | undefined {
    return this.#byAccessKey.get(accessKeyId);
  }

  /** The function's role session, as IAM sees its calls. */
  principal(definition: FunctionDefinition): Principal {
    return {
      kind: 'role',
      roleLogicalId: definition.roleLogicalId,
      session: definition.functionName,
      label: definition.displayName,
    };
  }

  async invoke(definition: FunctionDefinition, event: unknown): Promise<unknown> {
    try {
      const payload = await this.#pool(definition).invoke(event);
      this.#options.ledger.invoked(definition.logicalId, false);
      return payload;
    } catch (error) {
      this.#options.ledger.invoked(definition.logicalId, true);
      throw error instanceof LambdaInvocationError
        ? error
        : new LambdaInvocationError({
            errorType: 'Rehearsal.InvokeFailed',
            errorMessage: (error as Error).message,
          });
    }
  }

  async stop(): Promise<void> {
    await Promise.all([...this.#pools.values()].map((pool) => pool.stop()));
    this.#taskRoots.remove();
  }

  #pool(definition: FunctionDefinition): SandboxPool {
    let pool = this.#pools.get(definition.logicalId);
    if (!pool) {
      pool = new SandboxPool({
        environment: this.#environment(definition),
        timeoutSeconds: definition.timeoutSeconds,
        maxInstances: Math.max(
          1,
          Math.min(this.#options.maxInstances, definition.reservedConcurrency ?? Number.POSITIVE_INFINITY),
        ),
        onLog: (line) => this.#options.onLog(definition, line),
        onColdStart: () => this.#coldStart(definition),
      });
      this.#pools.set(definition.logicalId, pool);
    }
    return pool;
  }

  #coldStart(definition: FunctionDefinition): void {
    this.#options.ledger.coldStart(definition.logicalId);
    const principal = this.principal(definition);
    const stream = `${definition.logGroupArn}:log-stream:${logStreamName()}`;
    const checks = ['logs:CreateLogStream', 'logs:PutLogEvents'].map((action) => ({
      action,
      resource: stream,
    }));
    if (definition.tracing)
      checks.push(
        ...['xray:PutTraceSegments', 'xray:PutTelemetryRecords'].map((action) => ({ action, resource: '*' })),
      );
    for (const check of checks)
      this.#options.iam.authorize(principal, check).catch((error: unknown) => {
        this.#options.onLog(
          definition,
          `the rehearsal could not check ${check.action}: ${(error as Error).message}`,
        );
      });
  }

  #environment(definition: FunctionDefinition): Record<string, string> {
    const { region } = this.#options;
    const credentials = this.credentials(definition);
    return {
      PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
      LANG: 'en_US.UTF-8',
      TZ: ':UTC',
      ...definition.environment,
      // every AWS call goes to the rehearsal's endpoint; no shared config of this machine is read
      AWS_ENDPOINT_URL: this.#options.awsEndpointUrl,
      AWS_CONFIG_FILE: '/dev/null',
      AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
      AWS_REGION: region,
      AWS_DEFAULT_REGION: region,
      AWS_EXECUTION_ENV: `AWS_Lambda_${definition.runtime}`,
      AWS_LAMBDA_FUNCTION_NAME: definition.functionName,
      AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
      AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(definition.memoryMb),
      AWS_LAMBDA_INITIALIZATION_TYPE: 'on-demand',
      AWS_LAMBDA_LOG_GROUP_NAME: definition.logGroupName,
      AWS_LAMBDA_LOG_STREAM_NAME: logStreamName(),
      AWS_XRAY_CONTEXT_MISSING: 'LOG_ERROR',
      LAMBDA_TASK_ROOT: this.#taskRoots.of(definition.taskRoot, definition.handler),
      LAMBDA_RUNTIME_DIR: this.#options.runtimeDir,
      _HANDLER: definition.handler,
      _REHEARSAL_FUNCTION_ARN: definition.arn,
      _REHEARSAL_HTTPS_PORT: String(this.#options.https.port),
      _REHEARSAL_CA_CERT: this.#options.https.caPem,
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
      AWS_SESSION_TOKEN: credentials.sessionToken,
    };
  }
}

function logStreamName(): string {
  const day = new Date().toISOString().slice(0, 10).replaceAll('-', '/');
  return `${day}/[$LATEST]${randomBytes(16).toString('hex')}`;
}
