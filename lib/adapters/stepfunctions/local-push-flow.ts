import { outcomeOf } from '../../core/mesh/push-steps.ts';
import type { PushFlow, PushOutcome, PushRequest } from '../../core/ports.ts';
import {
  localFunctionArn,
  readPushDefinition,
  substitutePushDefinition,
} from '../../flow/push-definition.ts';
import type { PushTaskFunctions } from './push-steps-runner.ts';

/** A flow that failed; `error` is the name of what a Task threw, its cause kept. */
export class PushFlowFailedError extends Error {
  override name = 'PushFlowFailedError';
  readonly error: string;
  constructor(error: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.error = error;
  }
}

// Not a literal, so Lambda bundles leave the local interpreter out.
const interpreter = 'aws-local-stepfunctions';

/**
 * Runs lib/flow/push.asl.json in-process with aws-local-stepfunctions, each Task mapped to the
 * same function its Lambda handler calls, so local and deployed pushes take the same path.
 */
export class LocalPushFlow implements PushFlow {
  readonly #tasks: PushTaskFunctions;

  constructor(options: { readonly tasks: PushTaskFunctions }) {
    this.#tasks = options.tasks;
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
    const execution = machine.run(json(request), {
      overrides: {
        taskResourceLocalHandlers: {
          Begin: async (input) => json(await tasks.Begin(input)),
          FindBehind: async (input) => json(await tasks.FindBehind(input)),
          Send: async (input) => json(await tasks.Send(input)),
        },
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
