import { PushFlowFailedError } from '../server/core/mesh/errors.ts';
import { outcomeOf } from '../server/core/push/flow-schemas.ts';
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
    // on AWS the caller starts the state machine, which then invokes each task as its function
    recordCall({ stand: 'states:StartSyncExecution' });
    const tasks = this.#tasks;
    const json = <T>(value: T) => JSON.parse(JSON.stringify(value));
    const wait = this.#retryIntervalMs;
    const execution = machine.run(json(request), {
      overrides: {
        taskResourceLocalHandlers: {
          Begin: async (input) => json(await asFunction(pushTasks.Begin, () => tasks.Begin(input))),
          FindBehind: async (input) =>
            json(await asFunction(pushTasks.FindBehind, () => tasks.FindBehind(input))),
          Send: async (input) => json(await asFunction(pushTasks.Send, () => tasks.Send(input))),
        },
        ...(wait !== undefined
          ? { retryIntervalOverrides: Object.fromEntries(Object.keys(pushTasks).map((s) => [s, wait])) }
          : {}),
      },
    });
    try {
      return outcomeOf(await execution.result);
    } catch (error) {
      const cause = (error as { cause?: unknown }).cause ?? error;
      throw new PushFlowFailedError((cause as Error).name ?? 'Error', (cause as Error).message ?? '', {
        cause,
      });
    }
  }
}
