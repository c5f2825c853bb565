import { PushFlowFailedError } from '../server/core/mesh/errors.ts';
import { pushInExecutions } from '../server/core/push/executions.ts';
import type { PushFlow, PushLeg, PushOutcome, PushRequest } from '../server/core/push/ports.ts';
import type { PushTaskFunctions } from '../server/core/push/steps.ts';
import {
  localFunctionArn,
  pushTasks,
  readPushDefinition,
  substitutePushDefinition,
} from '../server/flows/push-definition.ts';
import { AwsQuotaError, awsQuotas, dataLimitExceeded, invocation, jsonBytes } from './aws-quotas.ts';
import { asFunction, recordCall } from './call-record.ts';

type Machine = import('aws-local-stepfunctions').StateMachine;
type JSONValue = Parameters<Machine['run']>[0];
type EventLogs = ReturnType<Machine['run']>['eventLogs'];

// Not a literal, so Lambda bundles leave the local interpreter out.
const interpreter = 'aws-local-stepfunctions';

/**
 * Runs lib/server/flows/push.asl.json in-process with aws-local-stepfunctions, each Task mapped to the
 * same function its Lambda handler calls, so local and deployed pushes take the same path,
 * Retry included (the interpreter matches a Retry's ErrorEquals on the thrown error's name).
 */
export class LocalPushFlow implements PushFlow {
  readonly #tasks: PushTaskFunctions;
  readonly #retryIntervalMs: number | undefined;
  readonly #expressMs: number;
  readonly #measured: ((state: string, bytes: number) => void) | undefined;

  /** `retryIntervalMs` replaces every Retry's wait (tests); by default the ASL's own waits hold. */
  /** `expressMs` shortens Express's five minutes (a test that sees an execution stopped at its end). */
  constructor(options: {
    readonly tasks: PushTaskFunctions;
    readonly retryIntervalMs?: number;
    readonly expressMs?: number;
    /** Told each state's and task's size in bytes as it is measured (benches: the largest state). */
    readonly measured?: (state: string, bytes: number) => void;
  }) {
    this.#measured = options.measured;
    this.#tasks = options.tasks;
    this.#retryIntervalMs = options.retryIntervalMs;
    this.#expressMs = options.expressMs ?? awsQuotas.expressMs;
  }

  push(request: PushRequest): Promise<PushOutcome> {
    return this.#chain(request) as Promise<PushOutcome>;
  }

  pushLeg(request: PushRequest, leg: PushLeg): Promise<PushOutcome | undefined> {
    return this.#chain(request, leg);
  }

  async #chain(request: PushRequest, leg?: PushLeg): Promise<PushOutcome | undefined> {
    const { StateMachine } = (await import(interpreter)) as typeof import('aws-local-stepfunctions');
    const machine = new StateMachine(
      JSON.parse(substitutePushDefinition(readPushDefinition(), localFunctionArn)),
      {
        validationOptions: { checkArn: false },
      },
    );
    const tasks = this.#tasks;
    const wait = this.#retryIntervalMs;
    const measured = this.#measured;
    // Step Functions measures each state's and task's data as UTF-8 JSON; one serialization
    // gives both the size and the copy the interpreter gets (no object shared with a task)
    const task =
      (state: keyof typeof pushTasks) =>
      async (input: JSONValue): Promise<JSONValue> => {
        const fn = pushTasks[state];
        const inputBytes = jsonBytes(input);
        measured?.(state, inputBytes);
        if (inputBytes > awsQuotas.stateBytes) throw dataLimitExceeded(state, 'input', inputBytes);
        const result = await invocation(fn, () =>
          asFunction(fn, (): Promise<unknown> => tasks[state](input)),
        );
        const text = JSON.stringify(result) ?? 'null';
        const bytes = Buffer.byteLength(text, 'utf8');
        measured?.(state, bytes);
        if (bytes > awsQuotas.stateBytes) throw dataLimitExceeded(state, 'result', bytes);
        return JSON.parse(text);
      };
    // each execution of a chained push is its own: its own five minutes, its own input
    const execute = async (input: unknown): Promise<unknown> => {
      // on AWS the caller starts the state machine, which then invokes each task as its function
      recordCall({ stand: 'states:StartSyncExecution' });
      const start = JSON.stringify(input);
      const startBytes = Buffer.byteLength(start, 'utf8');
      measured?.('(execution)', startBytes);
      // StartSyncExecution refuses such an input before any state runs
      if (startBytes > awsQuotas.stateBytes)
        throw new PushFlowFailedError(
          'States.DataLimitExceeded',
          dataLimitExceeded('(execution)', 'input', startBytes).message,
        );
      const execution = machine.run(JSON.parse(start), {
        overrides: {
          taskResourceLocalHandlers: {
            Begin: task('Begin'),
            FindBehind: task('FindBehind'),
            Send: task('Send'),
          },
          ...(wait !== undefined
            ? { retryIntervalOverrides: Object.fromEntries(Object.keys(pushTasks).map((s) => [s, wait])) }
            : {}),
        },
      });
      let quota: AwsQuotaError | undefined;
      const stop = (error: AwsQuotaError) => {
        quota ??= error;
        execution.abort();
      };
      const expires = setTimeout(
        () =>
          stop(
            new AwsQuotaError(
              'States.Timeout',
              `The execution ran past its ${this.#expressMs / 1000} seconds (Express's limit) and was stopped.`,
            ),
          ),
        this.#expressMs,
      );
      expires.unref();
      const watched = watchStateSizes(execution.eventLogs, stop, measured);
      let result: unknown;
      let failed: unknown;
      try {
        result = await execution.result;
      } catch (error) {
        failed = error;
      } finally {
        clearTimeout(expires);
        // the sizes are read from the execution's events, which may trail its result
        await watched;
      }
      const cause =
        quota ?? (failed === undefined ? undefined : ((failed as { cause?: unknown }).cause ?? failed));
      if (cause === undefined) return result;
      throw new PushFlowFailedError((cause as Error).name ?? 'Error', (cause as Error).message ?? '', {
        cause,
      });
    };
    return leg
      ? pushInExecutions(request, tasks.work, execute, leg)
      : pushInExecutions(request, tasks.work, execute);
  }
}

/**
 * Holds every state's output (after ResultPath and OutputPath: what the next state is handed) to
 * Step Functions' 256 KiB, as the service does between states: the first one over
 * stops the execution with `States.DataLimitExceeded`.
 */
async function watchStateSizes(
  events: EventLogs,
  stop: (error: AwsQuotaError) => void,
  measured: ((state: string, bytes: number) => void) | undefined,
): Promise<void> {
  for await (const event of events) {
    // a state's input is the output of the one before (checked here) or a task's (checked where
    // it is invoked); a Map iteration's states are its tasks'
    if (event.type !== 'StateExited' || event.index !== undefined || event.state.output === undefined)
      continue;
    const bytes = jsonBytes(event.state.output);
    measured?.(event.state.name, bytes);
    if (bytes > awsQuotas.stateBytes) {
      stop(dataLimitExceeded(event.state.name, 'result', bytes));
      return;
    }
  }
}
