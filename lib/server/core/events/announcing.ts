import type { AuditReader, AuditVerdict, VerifyRange } from '../audit/ports.ts';
import type { Actor } from '../audit/record.ts';
import type { ReportBody } from '../control/messages.ts';
import type { RecordedReport, ReportRecorded, ReportStore, ReportTimes } from '../control/ports.ts';
import type { ApplyJob } from '../mesh-file/apply-job.ts';
import type { ApplyJobStore } from '../mesh-file/ports.ts';
import type { Advanced } from '../rollout/advance.ts';
import { type RolloutDeps, Rollouts } from '../rollout/service.ts';
import type { PresenceStore } from '../signal/ports.ts';
import type { PresenceEvent } from '../signal/presence.ts';
import {
  applyJobEvent,
  auditEvent,
  type EventSink,
  presenceEvent,
  rolloutEvent,
  tell,
  unhealthyEvent,
} from './events.ts';

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

/** A report store that tells `node.unhealthy` once a report turned the node unhealthy, after it is recorded. */
export class AnnouncingReports implements ReportStore {
  readonly #store: ReportStore;
  readonly #events: EventSink;

  constructor(store: ReportStore, events: EventSink) {
    this.#store = store;
    this.#events = events;
  }

  async recordReport(report: ReportBody, times: ReportTimes, by?: Actor): Promise<ReportRecorded> {
    const recorded = await this.#store.recordReport(report, times, by);
    if (recorded.turnedUnhealthy)
      await tell(this.#events, [
        unhealthyEvent(report.node, report.health?.revision ?? report.revision, times.heardAt),
      ]);
    return recorded;
  }

  resetReport(node: string, by: Actor): Promise<RecordedReport | undefined> {
    return this.#store.resetReport(node, by);
  }
}

/**
 * Apply jobs that tell `apply.completed` or `apply.failed` once the record that ends the job is
 * written: whichever part ends it (the request's, the flow's, a stale job taken over), it ends
 * in one `record`, and a record refused (another part wrote first) tells nothing.
 */
export class AnnouncingApplyJobs implements ApplyJobStore {
  readonly #store: ApplyJobStore;
  readonly #events: EventSink;

  constructor(store: ApplyJobStore, events: EventSink) {
    this.#store = store;
    this.#events = events;
  }

  async record(next: ApplyJob, seenParts: number): Promise<void> {
    await this.#store.record(next, seenParts);
    const event = applyJobEvent(next);
    if (event) await tell(this.#events, [event]);
  }

  running: ApplyJobStore['running'] = () => this.#store.running();
  start: ApplyJobStore['start'] = (job, file, takingOver) => this.#store.start(job, file, takingOver);
  read: ApplyJobStore['read'] = (id) => this.#store.read(id);
  load: ApplyJobStore['load'] = (id) => this.#store.load(id);
  keepPlan: ApplyJobStore['keepPlan'] = (id, slices) => this.#store.keepPlan(id, slices);
  slice: ApplyJobStore['slice'] = (id, index) => this.#store.slice(id, index);
  ledger: ApplyJobStore['ledger'] = (id) => this.#store.ledger(id);
  noteRemoval: ApplyJobStore['noteRemoval'] = (id, removal) => this.#store.noteRemoval(id, removal);
  forgetRemoval: ApplyJobStore['forgetRemoval'] = (id, removal) => this.#store.forgetRemoval(id, removal);
}

/** An audit reader whose verify tells `audit.unverified` when it finds records that do not check. */
export class AnnouncingAuditReader implements AuditReader {
  readonly #reader: AuditReader;
  readonly #events: EventSink;
  readonly #now: () => Date;

  constructor(reader: AuditReader, events: EventSink, now: () => Date = () => new Date()) {
    this.#reader = reader;
    this.#events = events;
    this.#now = now;
  }

  page: AuditReader['page'] = (query) => this.#reader.page(query);

  async verify(range?: VerifyRange): Promise<AuditVerdict> {
    const verdict = await this.#reader.verify(range);
    const event = auditEvent(verdict, this.#now().toISOString());
    if (event) await tell(this.#events, [event]);
    return verdict;
  }
}
