import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { type Assembly, displayName, resourcesOfType } from './assembly.ts';
import { RehearsalProblem, throwIfFindings } from './problems.ts';
import { type References, referencedId } from './references.ts';

/** A Lambda function as the template defines it, references resolved. */
export type FunctionDefinition = {
  readonly logicalId: string;
  /** Its path in the CDK app (`Functions/ControlConsumer`), for people. */
  readonly displayName: string;
  readonly functionName: string;
  readonly arn: string;
  readonly roleLogicalId: string;
  readonly roleName: string;
  /** The bundled asset's folder in the assembly (Lambda's /var/task). */
  readonly taskRoot: string;
  readonly handler: string;
  readonly runtime: string;
  readonly timeoutSeconds: number;
  readonly memoryMb: number;
  /** The template's environment variables, resolved to the rehearsal's resources. */
  readonly environment: Readonly<Record<string, string>>;
  readonly logGroupName: string;
  readonly logGroupArn: string;
  readonly tracing: boolean;
  readonly reservedConcurrency: number | undefined;
};

/** Variables the Lambda service sets itself; a function that sets one is refused at deploy. */
export const lambdaReservedVariables = [
  '_HANDLER',
  '_X_AMZN_TRACE_ID',
  'AWS_DEFAULT_REGION',
  'AWS_REGION',
  'AWS_EXECUTION_ENV',
  'AWS_LAMBDA_FUNCTION_NAME',
  'AWS_LAMBDA_FUNCTION_MEMORY_SIZE',
  'AWS_LAMBDA_FUNCTION_VERSION',
  'AWS_LAMBDA_INITIALIZATION_TYPE',
  'AWS_LAMBDA_LOG_GROUP_NAME',
  'AWS_LAMBDA_LOG_STREAM_NAME',
  'AWS_ACCESS_KEY',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_LAMBDA_RUNTIME_API',
  'LAMBDA_TASK_ROOT',
  'LAMBDA_RUNTIME_DIR',
];
const environmentLimitBytes = 4 * 1024;

/** Everything Lambda would refuse at deploy or at the first invocation, for one function. */
export function functionFindings(definition: FunctionDefinition, where: string): string[] {
  const findings: string[] = [];
  if (!/^nodejs\d+\.x$/.test(definition.runtime))
    findings.push(
      `${where}: runtime ${definition.runtime} is not a Node.js runtime; the rehearsal runs Node.js only`,
    );
  if (!existsSync(definition.taskRoot))
    findings.push(`${where}: its code ${definition.taskRoot} is not in the assembly`);
  else {
    const modulePath = definition.handler.slice(0, Math.max(0, definition.handler.lastIndexOf('.')));
    const found = ['.js', '.mjs', '.cjs'].some((ext) =>
      existsSync(join(definition.taskRoot, `${modulePath}${ext}`)),
    );
    if (!modulePath || !found)
      findings.push(
        `${where}: handler ${definition.handler} names no file ${modulePath || '?'}.js/.mjs/.cjs in its code`,
      );
  }
  const names = Object.keys(definition.environment);
  for (const name of names.filter((key) => lambdaReservedVariables.includes(key)))
    findings.push(
      `${where}: environment variable ${name} is reserved by Lambda; the deploy would be refused`,
    );
  for (const name of names.filter((key) => !/^[a-zA-Z]\w+$/.test(key)))
    findings.push(`${where}: environment variable name ${JSON.stringify(name)} is not one Lambda accepts`);
  const size = names.reduce((sum, key) => sum + key.length + (definition.environment[key] ?? '').length, 0);
  if (size > environmentLimitBytes)
    findings.push(
      `${where}: its environment variables take ${size} bytes, over Lambda's ${environmentLimitBytes}`,
    );
  if (definition.timeoutSeconds < 1 || definition.timeoutSeconds > 900)
    findings.push(`${where}: timeout ${definition.timeoutSeconds} s is outside Lambda's 1–900 s`);
  if (definition.memoryMb < 128 || definition.memoryMb > 10_240)
    findings.push(`${where}: memory ${definition.memoryMb} MB is outside Lambda's 128–10240 MB`);
  return findings;
}

/** Every function of the template, each checked as Lambda would check it; all problems reported together. */
export function readFunctions(assembly: Assembly, references: References): FunctionDefinition[] {
  const findings: string[] = [];
  const definitions: FunctionDefinition[] = [];
  for (const [logicalId, resource] of resourcesOfType(assembly.template, 'AWS::Lambda::Function')) {
    const where = `function ${displayName(assembly.template, logicalId)} (${logicalId})`;
    try {
      const properties = resource.Properties ?? {};
      const assetPath = resource.Metadata?.['aws:asset:path'];
      if (typeof assetPath !== 'string') {
        findings.push(
          `${where}: its code is not a bundled asset of the assembly (inline or image code is not rehearsed)`,
        );
        continue;
      }
      const roleLogicalId = referencedId(properties.Role);
      if (!roleLogicalId || assembly.template.Resources[roleLogicalId]?.Type !== 'AWS::IAM::Role') {
        findings.push(
          `${where}: its role is not a role of this template, so its permissions cannot be checked`,
        );
        continue;
      }
      const variables = (references.resolve(
        (properties.Environment as { Variables?: unknown } | undefined)?.Variables ?? {},
        `${where} environment`,
      ) ?? {}) as Record<string, unknown>;
      const environment = Object.fromEntries(
        Object.entries(variables).map(([key, value]) => [key, String(value)]),
      );
      const identity = references.identity(logicalId);
      const functionName = identity?.ref as string;
      const logGroup = (properties.LoggingConfig as { LogGroup?: unknown } | undefined)?.LogGroup;
      const logGroupName = logGroup
        ? references.resolveString(logGroup, `${where} LoggingConfig.LogGroup`)
        : `/aws/lambda/${functionName}`;
      const { region, account, partition } = references.environment;
      const definition: FunctionDefinition = {
        logicalId,
        displayName: displayName(assembly.template, logicalId),
        functionName,
        arn: identity?.attributes.Arn as string,
        roleLogicalId,
        roleName: references.identity(roleLogicalId)?.ref as string,
        taskRoot: join(assembly.dir, assetPath),
        handler: references.resolveString(properties.Handler ?? '', `${where} Handler`),
        runtime: references.resolveString(properties.Runtime ?? '', `${where} Runtime`),
        timeoutSeconds: Number(references.resolve(properties.Timeout ?? 3, where)),
        memoryMb: Number(references.resolve(properties.MemorySize ?? 128, where)),
        environment,
        logGroupName,
        logGroupArn: `arn:${partition}:logs:${region}:${account}:log-group:${logGroupName}`,
        tracing: (properties.TracingConfig as { Mode?: string } | undefined)?.Mode === 'Active',
        reservedConcurrency:
          properties.ReservedConcurrentExecutions === undefined
            ? undefined
            : Number(properties.ReservedConcurrentExecutions),
      };
      findings.push(...functionFindings(definition, where));
      definitions.push(definition);
    } catch (error) {
      if (!(error instanceof RehearsalProblem)) throw error;
      findings.push(error.message);
    }
  }
  throwIfFindings('function', findings);
  return definitions;
}
