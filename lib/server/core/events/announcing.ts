import type { Advanced } from '../rollout/advance.ts';
import { type RolloutDeps, Rollouts } from '../rollout/service.ts';
import type { PresenceStore } from '../signal/ports.ts';
import type { PresenceEvent } from '../signal/presence.ts';
import { type EventSink, presenceEvent, rolloutEvent, tell } from './events.ts';

/** Rollouts that tell each step worth hearing (started, paused, halted, done) once it is written. */
export class AnnouncingRollouts extends Rollouts {
  readonly #events: EventSink;
  readonly #now: () => Date;

  constructor(deps: RolloutDeps, events: EventSink, now: () => Date = () => new Date()) {
    super(deps);
    this.#events = events;
    this.#now = now;
  }

  override async step(id: string): Promise<Advanced> {
    const advanced = await super.step(id);
    const event = rolloutEvent(advanced, this.#now().toISOString());
    if (event) await tell(this.#events, [event]);
    return advanced;
  }
}

/** A presence store that tells `node.online` and `node.offline` once the event is recorded (not a stale one). */
export class AnnouncingPresence implements PresenceStore {
  readonly #store: PresenceStore;
  readonly #events: EventSink;

  constructor(store: PresenceStore, events: EventSink) {
    this.#store = store;
    this.#events = events;
  }

  async recordPresence(event: PresenceEvent): Promise<void> {
    await this.#store.recordPresence(event);
    await tell(this.#events, [presenceEvent(event)]);
  }
}
