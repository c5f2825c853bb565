import { PushFlowFailedError } from '../server/core/mesh/errors.ts';
import { pushInExecutions } from '../server/core/push/executions.ts';
import type { PushFlow, PushOutcome, PushRequest } from '../server/core/push/ports.ts';
import type { PushTaskFunctions } from '../server/core/push/steps.ts';
import {
  localFunctionArn,
  pushTasks,
  readPushDefinition,
  substitutePushDefinition,
} from '../server/flows/push-definition.ts';
import { asFunction, recordCall } from './call-record.ts';

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

  /** `retryIntervalMs` replaces every Retry's wait (tests); by default the ASL's own waits hold. */
  constructor(options: { readonly tasks: PushTaskFunctions; readonly retryIntervalMs?: number }) {
    this.#tasks = options.tasks;
    this.#retryIntervalMs = options.retryIntervalMs;
  }

  async push(request: PushRequest): Promise<PushOutcome> {
    const { StateMachine } = (await import(interpreter)) as typeof import('aws-local-stepfunctions');
    const machine = new StateMachine(
      JSON.parse(substitutePushDefinition(readPushDefinition(), localFunctionArn)),
      {
        validationOptions: { checkArn: false },
      },
    );
    const tasks = this.#tasks;
    const json = <T>(value: T) => JSON.parse(JSON.stringify(value));
    const wait = this.#retryIntervalMs;
    const execute = async (input: unknown) => {
      // on AWS the caller starts the state machine, which then invokes each task as its function
      recordCall({ stand: 'states:StartSyncExecution' });
      const execution = machine.run(json(input), {
        overrides: {
          taskResourceLocalHandlers: {
            Begin: async (given) => json(await asFunction(pushTasks.Begin, () => tasks.Begin(given))),
            FindBehind: async (given) =>
              json(await asFunction(pushTasks.FindBehind, () => tasks.FindBehind(given))),
            Send: async (given) => json(await asFunction(pushTasks.Send, () => tasks.Send(given))),
          },
          ...(wait !== undefined
            ? { retryIntervalOverrides: Object.fromEntries(Object.keys(pushTasks).map((s) => [s, wait])) }
            : {}),
        },
      });
      try {
        return await execution.result;
      } catch (error) {
        const cause = (error as { cause?: unknown }).cause ?? error;
        throw new PushFlowFailedError((cause as Error).name ?? 'Error', (cause as Error).message ?? '', {
          cause,
        });
      }
    };
    return pushInExecutions(request, tasks.work, execute);
  }
}
