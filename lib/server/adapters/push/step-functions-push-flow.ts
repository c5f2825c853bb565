import {
  type SFNClient,
  StartSyncExecutionCommand,
  type StartSyncExecutionCommandOutput,
} from '@aws-sdk/client-sfn';
import { isTransientFault } from '../../core/faults.ts';
import { PushFlowFailedError, PushFlowUnavailableError } from '../../core/mesh/errors.ts';
import { pushInExecutions } from '../../core/push/executions.ts';
import type { PushFlow, PushLeg, PushOutcome, PushRequest } from '../../core/push/ports.ts';
import type { PushWork } from '../../core/push/work.ts';

/**
 * Push on the deployed Step Functions Express state machine, waiting for each execution's answer:
 * one that paused at its time is followed by the next, started from its state; the outcome's lists
 * are read from the push's work, where the steps kept them.
 */
export class StepFunctionsPushFlow implements PushFlow {
  readonly #client: SFNClient;
  readonly #stateMachineArn: string;
  readonly #work: PushWork;

  constructor(options: {
    readonly client: SFNClient;
    readonly stateMachineArn: string;
    readonly work: PushWork;
  }) {
    this.#client = options.client;
    this.#stateMachineArn = options.stateMachineArn;
    this.#work = options.work;
  }

  push(request: PushRequest): Promise<PushOutcome> {
    return pushInExecutions(request, this.#work, (input) => this.#execute(input));
  }

  pushLeg(request: PushRequest, leg: PushLeg): Promise<PushOutcome | undefined> {
    return pushInExecutions(request, this.#work, (input) => this.#execute(input), leg);
  }

  async #execute(input: unknown): Promise<unknown> {
    let answer: StartSyncExecutionCommandOutput;
    try {
      answer = await this.#client.send(
        new StartSyncExecutionCommand({
          stateMachineArn: this.#stateMachineArn,
          input: JSON.stringify(input),
        }),
      );
    } catch (error) {
      if (isTransientFault(error) || (error as Error).name === 'ExecutionLimitExceeded') {
        throw new PushFlowUnavailableError('the push flow could not be started', { cause: error });
      }
      throw error;
    }
    if (answer.status !== 'SUCCEEDED') {
      // A timed-out execution names no error; TIMED_OUT is told apart from a Task's failure.
      const error = answer.error ?? (answer.status === 'TIMED_OUT' ? 'States.Timeout' : 'States.Runtime');
      throw new PushFlowFailedError(
        error,
        taskMessage(answer.cause) ?? `the push flow ended ${answer.status}`,
        {
          cause: { status: answer.status, error: answer.error, cause: answer.cause },
        },
      );
    }
    return JSON.parse(answer.output ?? 'null');
  }
}

/**
 * A failed Lambda Task's cause is the runtime's JSON (errorType, errorMessage, trace); only our
 * error's message is kept, never the trace, because the mapped answer may quote it.
 */
function taskMessage(cause: string | undefined): string | undefined {
  if (!cause) return undefined;
  try {
    const parsed = JSON.parse(cause) as { errorMessage?: unknown };
    return typeof parsed.errorMessage === 'string' ? parsed.errorMessage : undefined;
  } catch {
    return undefined;
  }
}
