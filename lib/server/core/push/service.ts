import type { Actor } from '../audit/record.ts';
import { type Holder, holdersOf } from '../hold/held-back.ts';
import type { HoldReader } from '../hold/ports.ts';
import { NodeNotFoundError, PushFlowFailedError } from '../mesh/errors.ts';
import type { PushStore } from '../mesh/store.ts';
import type { Clock } from '../ports.ts';
import { type PushPlan, planPush } from './plan.ts';
import type {
  DeliveryReader,
  PushOutcome,
  PushRecords,
  PushRequest,
  PushStarter,
  PushStepsRunner,
} from './ports.ts';
import { newPushId, outcomeOfRecord, runningRecord } from './records.ts';

/** What an operator's push answers: its outcome when it ended within the wait, else that it runs on. */
export type PushStarted =
  | {
      readonly id: string;
      readonly state: 'done';
      readonly outcome: PushOutcome & { readonly holders?: readonly Holder[] };
    }
  | { readonly id: string; readonly state: 'running' };

export type PushesDeps = {
  /** Where the named node is looked up: an unknown node is refused before any flow starts. */
  readonly store: PushStore;
  readonly records: PushRecords;
  /** Runs the push where it outlives the request: push-run on AWS, in-process locally. */
  readonly starter: PushStarter;
  /** Who holds nodes back, named with every push's answer and read by a plan as the push would. */
  readonly holds: HoldReader;
  readonly deliveries: DeliveryReader;
  /** The flow's order, run in-process for a plan. */
  readonly runSteps: PushStepsRunner;
  readonly now: Clock;
};

/**
 * An operator's push and its plan (docs/decisions/push-without-polling.md): the node checked, the
 * push recorded, started where it outlives the request and waited for as long as the request may
 * take; then read back from its record, with who holds nodes back named.
 */
export class Pushes {
  readonly #deps: PushesDeps;

  constructor(deps: PushesDeps) {
    this.#deps = deps;
  }

  /** Pushes as `request` asks, waiting at most `waitMs` (0: not at all) for the outcome. */
  async push(request: PushRequest, by: Actor, waitMs: number): Promise<PushStarted> {
    await this.#known(request.node);
    const startedAt = this.#deps.now();
    const id = newPushId(startedAt);
    const requestedBy = by.principal;
    await this.#deps.records.start(runningRecord(id, request, { requestedBy }, startedAt), by);
    const done = await this.#deps.starter.start({ pushId: id, request, requestedBy }, waitMs);
    const record = done ? await this.#deps.records.read(id) : undefined;
    if (record?.state !== 'done') return { id, state: 'running' };
    // A failed flow is named in its record; its name maps to an answer as for a flow run here.
    if (record.outcome === 'failed')
      throw new PushFlowFailedError(record.error ?? 'Error', record.errorMessage ?? `push ${id} failed`);
    const holders = holdersOf(await this.#deps.holds.view([]));
    return {
      id,
      state: 'done',
      outcome: { ...outcomeOfRecord(record), ...(holders.length > 0 ? { holders } : {}) },
    };
  }

  /** What a push would send, each node with its changes, and what it would leave held back; nothing is written. */
  async plan(request: PushRequest): Promise<PushPlan> {
    await this.#known(request.node);
    return planPush(request, {
      store: this.#deps.store,
      deliveries: this.#deps.deliveries,
      holds: this.#deps.holds,
      runSteps: this.#deps.runSteps,
    });
  }

  async #known(node: string | undefined) {
    if (node !== undefined && !(await this.#deps.store.readNode(node))) throw new NodeNotFoundError(node);
  }
}
