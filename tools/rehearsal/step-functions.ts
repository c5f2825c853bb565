import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ExecutionTimeoutError, StateMachine, type StateMachineDefinition } from 'aws-local-stepfunctions';
import { type Assembly, displayName, resourcesOfType } from './assembly.ts';
import type { StatesServer } from './aws-endpoint.ts';
import type { FunctionDefinition } from './function-definitions.ts';
import type { IamCheck, Principal } from './iam-check.ts';
import { LambdaInvocationError, type LambdaService } from './lambda-service.ts';
import { RehearsalProblem, throwIfFindings } from './problems.ts';
import { type References, referencedId } from './references.ts';

/** A state machine of the template: its definition with the substitutions filled, and the function behind each Task. */
export type MachineDefinition = {
  readonly logicalId: string;
  readonly displayName: string;
  readonly arn: string;
  readonly name: string;
  readonly type: string;
  readonly roleLogicalId: string;
  readonly definition: StateMachineDefinition;
  /** Task state name → the function its Resource names, and whether it is the optimized `lambda:invoke`. */
  readonly tasks: ReadonlyMap<string, { readonly fn: FunctionDefinition; readonly optimized: boolean }>;
  readonly logging: boolean;
  readonly tracing: boolean;
};

type AslState = {
  Type?: string;
  Resource?: string;
  Parameters?: { FunctionName?: unknown };
  States?: Record<string, AslState>;
  Iterator?: AslState;
  ItemProcessor?: AslState;
  Branches?: AslState[];
  QueryLanguage?: string;
};

function* tasksOf(machine: AslState): Generator<[string, AslState]> {
  for (const [name, state] of Object.entries(machine.States ?? {})) {
    if (state.Type === 'Task') yield [name, state];
    for (const nested of [state.Iterator, state.ItemProcessor, ...(state.Branches ?? [])])
      if (nested) yield* tasksOf(nested);
  }
}

function definitionText(
  assembly: Assembly,
  references: References,
  properties: Record<string, unknown>,
  where: string,
): string {
  if (properties.DefinitionString !== undefined)
    return references.resolveString(properties.DefinitionString, where);
  if (properties.Definition !== undefined)
    return JSON.stringify(references.resolve(properties.Definition, where));
  const location = references.resolve(properties.DefinitionS3Location, where) as { Key?: string } | undefined;
  const file = location?.Key ? assembly.assetFile(location.Key) : undefined;
  if (!file)
    throw new RehearsalProblem(
      'flow',
      `${where}: its definition is in S3 at ${location?.Key ?? '?'}, which is no asset of the assembly`,
    );
  return readFileSync(file, 'utf8');
}

/** Every state machine of the template, its definition checked the way CreateStateMachine would check it. */
export function readMachines(
  assembly: Assembly,
  references: References,
  lambda: LambdaService,
): MachineDefinition[] {
  const findings: string[] = [];
  const machines: MachineDefinition[] = [];
  for (const [logicalId, resource] of resourcesOfType(
    assembly.template,
    'AWS::StepFunctions::StateMachine',
  )) {
    const where = `state machine ${displayName(assembly.template, logicalId)} (${logicalId})`;
    try {
      const properties = resource.Properties ?? {};
      let text = definitionText(assembly, references, properties, where);
      const substitutions = (references.resolve(properties.DefinitionSubstitutions ?? {}, where) ??
        {}) as Record<string, unknown>;
      for (const [key, value] of Object.entries(substitutions))
        text = text.replaceAll(`\${${key}}`, String(value));
      const left = [...new Set([...text.matchAll(/\$\{(\w+)\}/g)].map((match) => match[1]))];
      if (left.length > 0)
        findings.push(
          `${where}: its definition keeps \${${left.join('}, ${')}}, which no definition substitution fills`,
        );
      const definition = JSON.parse(text) as StateMachineDefinition & AslState;
      if (text.includes('"JSONata"'))
        findings.push(`${where}: it uses JSONata, and the rehearsal's interpreter speaks JSONPath only`);
      new StateMachine(definition);
      const tasks = new Map<string, { fn: FunctionDefinition; optimized: boolean }>();
      for (const [stateName, state] of tasksOf(definition)) {
        const optimized = /^arn:[^:]+:states:::lambda:invoke$/.test(state.Resource ?? '');
        const target = optimized ? String(state.Parameters?.FunctionName ?? '') : (state.Resource ?? '');
        const fn =
          lambda.byArn(target) ?? lambda.definitions.find((candidate) => candidate.functionName === target);
        if (fn) tasks.set(stateName, { fn, optimized });
        else
          findings.push(
            `${where}: Task ${stateName} calls ${target || state.Resource}, which is no function of this template`,
          );
      }
      const roleLogicalId = referencedId(properties.RoleArn);
      if (!roleLogicalId) {
        findings.push(
          `${where}: its role is not a role of this template, so its permissions cannot be checked`,
        );
        continue;
      }
      const identity = references.identity(logicalId);
      const logging = references.resolve(properties.LoggingConfiguration, where) as
        | { Destinations?: unknown[] }
        | undefined;
      machines.push({
        logicalId,
        displayName: displayName(assembly.template, logicalId),
        arn: identity?.attributes.Arn as string,
        name: identity?.attributes.Name as string,
        type: String(references.resolve(properties.StateMachineType ?? 'STANDARD', where)),
        roleLogicalId,
        definition,
        tasks,
        logging: (logging?.Destinations?.length ?? 0) > 0,
        tracing:
          (references.resolve(properties.TracingConfiguration, where) as { Enabled?: boolean } | undefined)
            ?.Enabled === true,
      });
    } catch (error) {
      findings.push(
        error instanceof RehearsalProblem ? error.message : `${where}: ${(error as Error).message}`,
      );
    }
  }
  throwIfFindings('flow', findings);
  return machines;
}

/** The state machine's role session, as IAM sees the calls its executions make. */
export function machinePrincipal(machine: MachineDefinition): Principal {
  return {
    kind: 'role',
    roleLogicalId: machine.roleLogicalId,
    session: machine.name,
    label: machine.displayName,
  };
}

/** What the Step Functions service does with a state machine's role when it is created: logging and tracing permissions. */
export const machineServiceActions = {
  logging: [
    'logs:CreateLogDelivery',
    'logs:GetLogDelivery',
    'logs:UpdateLogDelivery',
    'logs:DeleteLogDelivery',
    'logs:ListLogDeliveries',
    'logs:PutResourcePolicy',
    'logs:DescribeResourcePolicies',
    'logs:DescribeLogGroups',
  ],
  tracing: [
    'xray:PutTraceSegments',
    'xray:PutTelemetryRecords',
    'xray:GetSamplingRules',
    'xray:GetSamplingTargets',
  ],
};

/**
 * Step Functions for the rehearsal: StartSyncExecution on an Express state machine of the
 * template runs its own definition on aws-local-stepfunctions, each Task invoking the
 * function its Resource names, after the state machine's role is checked for
 * lambda:InvokeFunction on it. The answer has the shape StartSyncExecution gives.
 */
export class StepFunctionsService implements StatesServer {
  readonly machines: readonly MachineDefinition[];
  readonly #lambda: LambdaService;
  readonly #iam: IamCheck;

  constructor(machines: readonly MachineDefinition[], lambda: LambdaService, iam: IamCheck) {
    this.machines = machines;
    this.#lambda = lambda;
    this.#iam = iam;
  }

  async serve(operation: string, input: Record<string, unknown>): Promise<{ status: number; body: unknown }> {
    const refuse = (type: string, message: string) => ({ status: 400, body: { __type: type, message } });
    if (operation !== 'StartSyncExecution')
      return refuse('UnsupportedOperation', `the rehearsal serves StartSyncExecution only, not ${operation}`);
    const machine = this.machines.find((candidate) => candidate.arn === input.stateMachineArn);
    if (!machine)
      return refuse('StateMachineDoesNotExist', `State Machine Does Not Exist: '${input.stateMachineArn}'`);
    if (machine.type !== 'EXPRESS')
      return refuse(
        'StateMachineTypeNotSupported',
        'This operation is not supported by this type of state machine',
      );
    let executionInput: unknown;
    try {
      executionInput = JSON.parse(String(input.input ?? '{}'));
    } catch {
      return refuse('InvalidExecutionInput', 'Invalid State Machine Execution Input');
    }
    return {
      status: 200,
      body: await this.#execute(machine, executionInput, String(input.input ?? '{}'), input.name),
    };
  }

  async #execute(
    machine: MachineDefinition,
    executionInput: unknown,
    rawInput: string,
    requestedName: unknown,
  ) {
    const name = typeof requestedName === 'string' ? requestedName : randomUUID();
    const arn = machine.arn.replace(':stateMachine:', ':express:');
    const startDate = Date.now() / 1000;
    const handlers = Object.fromEntries(
      [...machine.tasks].map(([stateName, task]) => [
        stateName,
        (taskInput: unknown) => this.#task(machine, task, taskInput),
      ]),
    );
    const base = {
      executionArn: `${arn}:${name}:${randomUUID()}`,
      stateMachineArn: machine.arn,
      name,
      startDate,
      input: rawInput,
    };
    try {
      const output = await new StateMachine(machine.definition).run(executionInput as never, {
        overrides: { taskResourceLocalHandlers: handlers as never },
      }).result;
      return { ...base, stopDate: Date.now() / 1000, status: 'SUCCEEDED', output: JSON.stringify(output) };
    } catch (error) {
      if (error instanceof ExecutionTimeoutError)
        return { ...base, stopDate: Date.now() / 1000, status: 'TIMED_OUT', error: 'States.Timeout' };
      const cause = ((error as { cause?: unknown }).cause ?? error) as Error & {
        lambdaError?: LambdaInvocationError;
      };
      const lambdaError = cause.lambdaError;
      return {
        ...base,
        stopDate: Date.now() / 1000,
        status: 'FAILED',
        error: cause.name,
        cause: lambdaError
          ? JSON.stringify({
              errorType: lambdaError.errorType,
              errorMessage: lambdaError.errorMessage,
              trace: lambdaError.trace,
            })
          : cause.message,
      };
    }
  }

  async #task(
    machine: MachineDefinition,
    task: { fn: FunctionDefinition; optimized: boolean },
    input: unknown,
  ) {
    const decision = await this.#iam.authorize(machinePrincipal(machine), {
      action: 'lambda:InvokeFunction',
      resource: task.fn.arn,
    });
    if (!decision.allowed)
      throw Object.assign(
        new Error(`not authorized to perform lambda:InvokeFunction on ${task.fn.arn}: ${decision.reason}`),
        {
          name: 'Lambda.AWSLambdaException',
        },
      );
    const payload = task.optimized ? (input as { Payload?: unknown }).Payload : input;
    try {
      const result = await this.#lambda.invoke(task.fn, payload ?? {});
      return task.optimized ? { ExecutedVersion: '$LATEST', Payload: result, StatusCode: 200 } : result;
    } catch (error) {
      if (!(error instanceof LambdaInvocationError)) throw error;
      throw Object.assign(new Error(error.errorMessage), { name: error.errorType, lambdaError: error });
    }
  }
}
