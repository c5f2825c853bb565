import { AwsQuotaError, awsQuotas } from './aws-quotas.ts';

/**
 * The history a Standard execution of a stepping flow (lib/server/flows/rollout.asl.json,
 * apply.asl.json: Advance → Finished → Wait → Advance…) records, counted as Step Functions counts
 * it, event by event:
 * - the start: ExecutionStarted (1);
 * - each loop: the Advance Task (TaskStateEntered, LambdaFunctionScheduled, LambdaFunctionStarted,
 *   LambdaFunctionSucceeded, TaskStateExited: 5), the Finished Choice (ChoiceStateEntered,
 *   ChoiceStateExited: 2) and the Wait (WaitStateEntered, WaitStateExited: 2): 9;
 * - a Task that fails and is retried adds LambdaFunctionFailed and a new Scheduled and Started (3).
 * Past 25,000 the execution fails, as on AWS, and nothing steps its record again: a record left
 * `running` by a dead execution stays so until something notices.
 */
export const historyEvents = { started: 1, loop: 9, retried: 3 } as const;

export class SteppingHistory {
  readonly #events = new Map<string, number>();
  readonly #dead = new Map<string, AwsQuotaError>();
  readonly #flow: string;
  readonly #limit: number;

  /** `limit` lowers the 25,000 events (tests). */
  constructor(flow: string, limit: number = awsQuotas.historyEvents) {
    this.#flow = flow;
    this.#limit = limit;
  }

  /** A new execution for the record `id` (a start, a resume): its history begins again. */
  started(id: string): void {
    this.#dead.delete(id);
    this.#events.set(id, historyEvents.started);
  }

  /**
   * Counts `events` more for `id`'s execution (started at its first count when none is known:
   * a record found running by a driver that starts again); answers the error that ended the
   * execution when this passes the limit.
   */
  record(id: string, events: number): AwsQuotaError | undefined {
    const now = (this.#events.get(id) ?? historyEvents.started) + events;
    this.#events.set(id, now);
    if (now <= this.#limit || this.#dead.has(id)) return undefined;
    const error = new AwsQuotaError(
      'States.Runtime',
      `The ${this.#flow} execution for ${id} failed: its history reached ${now} events, past Step Functions' ${this.#limit} for a Standard execution.`,
    );
    this.#dead.set(id, error);
    return error;
  }

  /** Whether `id`'s execution died of its history: nothing steps it any more. */
  dead(id: string): boolean {
    return this.#dead.has(id);
  }

  events(id: string): number {
    return this.#events.get(id) ?? 0;
  }
}
