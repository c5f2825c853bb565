import { BuildNotFoundError, StaleReportError } from '../../lib/server/core/control/errors.ts';
import type { BuildBody, ReportBody } from '../../lib/server/core/control/messages.ts';
import type {
  BuildStore,
  BuildTimes,
  ControlSender,
  DeadLetterKind,
  Outgoing,
  QueueRecord,
  QueueSettlement,
  RecordedBuild,
  RecordedReport,
  ReportStore,
  ReportTimes,
} from '../../lib/server/core/control/ports.ts';
import type { ModuleVersions } from '../../lib/server/core/mesh/ports.ts';
import type { Log } from '../../lib/server/core/ports.ts';
import type { PushFlow, PushOutcome, PushRequest } from '../../lib/server/core/push/ports.ts';
import { StoreUnavailableError } from '../../lib/server/core/unavailable.ts';

/**
 * Typed in-memory implementations of the control ports, for tests about the control logic.
 * `down` makes a store answer as an unreachable one would.
 */
export class InMemoryControlStore {
  down = false;
  readonly reports = new Map<string, RecordedReport>();
  readonly builds = new Map<string, RecordedBuild>();
  writes = 0;

  private check(what: string) {
    if (this.down)
      throw new StoreUnavailableError(what, {
        cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
      });
  }

  /** The nodes whose last report with health said unhealthy. */
  readonly unhealthy = new Set<string>();

  /** Every node is taken to exist and to have been sent what its reports name: the mesh is not modelled here. */
  readonly reportStore: ReportStore = {
    recordReport: async (report: ReportBody, times: ReportTimes) => {
      this.check('recording a report');
      const kept = this.reports.get(report.node);
      if (kept && kept.sequence >= report.sequence)
        throw new StaleReportError(report.node, report.sequence, kept.sequence);
      this.writes += 1;
      this.reports.set(report.node, keptReport(kept, report, times.heardAt));
      // health is kept as the store keeps it: the first unhealthy report after any other turns it
      const wasUnhealthy = this.unhealthy.has(report.node);
      if (report.health?.state === 'unhealthy') this.unhealthy.add(report.node);
      else if (report.health) this.unhealthy.delete(report.node);
      return { turnedUnhealthy: report.health?.state === 'unhealthy' && !wasUnhealthy };
    },
    resetReport: async (node: string) => {
      this.check('resetting a report');
      const kept = this.reports.get(node);
      this.reports.delete(node);
      return kept;
    },
  };

  readonly buildStore: BuildStore = {
    recordBuild: async (build: BuildBody, times: BuildTimes) => {
      this.check('recording a build');
      const retracted = this.retracted.has(`${build.module} ${build.version}`);
      if (this.builds.has(build.id)) return retracted ? 'retracted' : 'repeat';
      this.writes += 1;
      this.builds.set(build.id, { ...build, ...times });
      return retracted ? 'retracted' : 'recorded';
    },
    latestSuccessfulBuilds: async () => {
      this.check('reading builds');
      return [...this.#latest().values()];
    },
    retractBuild: async (module: string, version: string, retractedAt: string) => {
      this.check('retracting a build');
      const builds = [...this.builds.values()].filter(
        (build) => build.module === module && build.version === version && build.result === 'succeeded',
      );
      if (builds.length === 0) throw new BuildNotFoundError(module, version);
      const since = this.retracted.get(`${module} ${version}`);
      if (!since) this.retracted.set(`${module} ${version}`, retractedAt);
      return {
        module,
        version,
        retractedAt: since ?? retractedAt,
        already: since !== undefined,
        builds: builds.map((build) => build.id),
        latest: this.#latest().get(module) ?? null,
      };
    },
  };

  readonly retracted = new Map<string, string>();

  /** Each module's latest successful build by receivedAt, then id, retracted versions left out. */
  #latest(): Map<string, RecordedBuild> {
    const latest = new Map<string, RecordedBuild>();
    const ordered = [...this.builds.values()]
      .filter(
        (build) => build.result === 'succeeded' && !this.retracted.has(`${build.module} ${build.version}`),
      )
      .sort((a, b) => (a.receivedAt + a.id).localeCompare(b.receivedAt + b.id));
    for (const build of ordered) latest.set(build.module, build);
    return latest;
  }
}

/** The report store's write (lib/server/adapters/control/report-store.ts) on a kept report. */
function keptReport(kept: RecordedReport | undefined, report: ReportBody, heardAt: string): RecordedReport {
  const applied = kept?.appliedRevision !== undefined ? { appliedRevision: kept.appliedRevision } : {};
  const appliedAt = kept?.appliedAt !== undefined ? { appliedAt: kept.appliedAt } : {};
  if (report.state === 'heartbeat') {
    const { step: _step, ...heartbeat } = report;
    const keptStep = kept?.step !== undefined ? { step: kept.step } : {};
    return {
      ...heartbeat,
      ...keptStep,
      state: kept?.state ?? report.state,
      revision: kept?.revision ?? report.revision,
      heardAt,
      ...applied,
      ...appliedAt,
    };
  }
  if (report.state === 'applied')
    return { ...report, heardAt, appliedRevision: report.revision, appliedAt: heardAt };
  return { ...report, heardAt, ...applied, ...appliedAt };
}

export class InMemoryMesh implements ModuleVersions, PushFlow {
  down = false;
  /** What push does: answer, throw, or never answer (a push that times out). */
  pushBehaviour: 'ok' | 'fail' | 'hang' = 'ok';
  readonly versions = new Map<string, string>();
  pushes = 0;

  /** Carriers of every module, and how many one pass moves before it says `more` (as a deadline would). */
  carriers = ['n1'];
  carriersPerPass = Number.POSITIVE_INFINITY;
  /** Each module's carriers at each version. */
  readonly movedTo = new Map<string, Map<string, string>>();
  readonly passes: Array<{
    module: string;
    version: string;
    continues: boolean;
    until?: number;
    after?: string;
  }> = [];

  async setModuleVersion(
    module: string,
    version: string,
    _by?: unknown,
    options: {
      readonly carriers?: boolean;
      readonly until?: number;
      readonly continues?: boolean;
      readonly after?: string;
    } = {},
  ) {
    if (this.down)
      throw Object.assign(new Error('throttled'), { name: 'ThrottlingException', $retryable: {} });
    this.passes.push({
      module,
      version,
      continues: options.continues === true,
      ...(options.until === undefined ? {} : { until: options.until }),
      ...(options.after === undefined ? {} : { after: options.after }),
    });
    const previous = this.versions.get(module) ?? null;
    if (options.continues && previous !== version)
      return { carriers: [], previous, more: false, overtaken: true };
    this.versions.set(module, version);
    const at = this.movedTo.get(module) ?? new Map<string, string>();
    this.movedTo.set(module, at);
    if (options.carriers === false) return { carriers: this.carriers, previous, more: false };
    // walked in order from after `after`, as the store walks them
    const from = options.after === undefined ? 0 : this.carriers.indexOf(options.after) + 1;
    const walked = this.carriers.slice(from, from + this.carriersPerPass);
    for (const node of walked) at.set(node, version);
    const more = from + walked.length < this.carriers.length;
    return { carriers: walked, previous, more, ...(more ? { next: walked.at(-1) } : {}) };
  }

  readonly moved: Array<{ module: string; version: string; nodes: readonly string[] }> = [];

  async moveCarriers(module: string, version: string, nodes: readonly string[]) {
    this.moved.push({ module, version, nodes });
  }

  /** Modules an upgrade can name: each one given a version here, and `web`. */
  async isKnown(module: string) {
    return module === 'web' || this.versions.has(module);
  }

  async push(_request: PushRequest): Promise<PushOutcome> {
    this.pushes += 1;
    if (this.pushBehaviour === 'fail')
      throw Object.assign(new Error('execution failed'), { name: 'ExecutionFailed' });
    if (this.pushBehaviour === 'hang') return new Promise<never>(() => {});
    return { pushed: null, flushed: [], rounds: 0, behind: [] };
  }
}

export class RecordingSender implements ControlSender {
  readonly sent: Outgoing[] = [];
  private readonly seen = new Set<string>();
  async send(messages: readonly Outgoing[]) {
    return messages.map((outgoing, index) => {
      const dedupe = outgoing.deduplicationId;
      if (!dedupe || !this.seen.has(dedupe)) this.sent.push(outgoing);
      if (dedupe) this.seen.add(dedupe);
      return { subject: outgoing.message.subject, messageId: `sent-${this.sent.length}-${index}` };
    });
  }
}

export type DeadLetter = {
  readonly messageId: string;
  readonly body: string;
  readonly kind: DeadLetterKind;
  readonly reason: string;
  readonly type?: string;
  readonly subject?: string;
};

export class RecordingSettlement implements QueueSettlement {
  readonly holds: Array<{ messageId: string; visibilitySeconds: number }> = [];
  readonly deadLetters: DeadLetter[] = [];
  async hold(record: QueueRecord, visibilitySeconds: number) {
    this.holds.push({ messageId: record.messageId, visibilitySeconds });
  }
  async deadLetter(record: QueueRecord, letter: Omit<DeadLetter, 'messageId' | 'body'>) {
    this.deadLetters.push({ messageId: record.messageId, body: record.body, ...letter });
  }
}

type Level = 'info' | 'warn' | 'error';

/**
 * A log that keeps each line: `lines` its level and text, `coded` beside them the code and the
 * fields a coded line carries (what a program reads).
 */
export class RecordingLog implements Log {
  readonly lines: Array<{ level: Level; message: string }> = [];
  readonly coded: Array<{ level: Level; code: unknown; fields: Record<string, unknown> }> = [];
  info(message: string, fields: Record<string, unknown> = {}) {
    this.#keep('info', message, fields);
  }
  warn(message: string, fields: Record<string, unknown> = {}) {
    this.#keep('warn', message, fields);
  }
  error(message: string, fields: Record<string, unknown> = {}) {
    this.#keep('error', message, fields);
  }
  #keep(level: Level, message: string, fields: Record<string, unknown>) {
    this.lines.push({ level, message });
    this.coded.push({ level, code: fields.code, fields });
  }
}
