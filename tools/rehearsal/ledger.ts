import type { RehearsalProblem } from './problems.ts';

/** A call the IAM check refused: who, what, on which resource, and why. */
export type Denial = {
  /** The function (by its path in the app), state machine or service that made the call. */
  readonly principal: string;
  readonly action: string;
  readonly resource: string;
  readonly reason: string;
};

export type InvocationCount = { invocations: number; failures: number; coldStarts: number };

type Listener = {
  denied?(denial: Denial): void;
  problem?(problem: RehearsalProblem): void;
};

/**
 * What happened during one rehearsal, as it happened: problems found, calls denied, calls
 * made, functions invoked. The report is read from here at the end; listeners see denials and
 * problems at once, so a person watching knows the moment something would have failed.
 */
export class RehearsalLedger {
  readonly problems: RehearsalProblem[] = [];
  readonly denials: Denial[] = [];
  /** principal → action → how many allowed calls. */
  readonly calls = new Map<string, Map<string, number>>();
  /** function logical id → invocations. */
  readonly invocations = new Map<string, InvocationCount>();
  readonly #listeners: Listener[] = [];

  listen(listener: Listener): void {
    this.#listeners.push(listener);
  }

  problem(problem: RehearsalProblem): void {
    if (this.problems.some((known) => known.message === problem.message)) return;
    this.problems.push(problem);
    for (const listener of this.#listeners) listener.problem?.(problem);
  }

  denied(denial: Denial): void {
    this.denials.push(denial);
    for (const listener of this.#listeners) listener.denied?.(denial);
  }

  allowed(principal: string, action: string): void {
    const actions = this.calls.get(principal) ?? new Map<string, number>();
    actions.set(action, (actions.get(action) ?? 0) + 1);
    this.calls.set(principal, actions);
  }

  #count(logicalId: string): InvocationCount {
    const count = this.invocations.get(logicalId) ?? { invocations: 0, failures: 0, coldStarts: 0 };
    this.invocations.set(logicalId, count);
    return count;
  }

  invoked(logicalId: string, failed: boolean): void {
    const count = this.#count(logicalId);
    count.invocations += 1;
    if (failed) count.failures += 1;
  }

  coldStart(logicalId: string): void {
    this.#count(logicalId).coldStarts += 1;
  }
}
