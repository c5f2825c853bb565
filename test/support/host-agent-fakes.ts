import type {
  AgentState,
  AgentStateStore,
  Applier,
  ApplyResult,
  CheckResult,
  ControlPlane,
  DeclarationOpener,
  FetchedDeclaration,
  GoodDeclaration,
  HealthCheck,
  HostReport,
} from '../../lib/clients/host/agent/ports.ts';

/**
 * Typed fakes of the host agent's ports (lib/clients/host/agent/ports.ts), for tests of the run loop's
 * health and reverts: a control plane scripted fetch by fetch, an applier and a check scripted
 * result by result, and the agent's memory in memory.
 */

/** Each fetch takes the next answer, then repeats the last; `away` makes every call fail as an unreachable one does. */
export class ScriptedControlPlane implements ControlPlane {
  readonly reports: HostReport[] = [];
  readonly etagsAsked: Array<string | undefined> = [];
  away: Error | undefined;
  readonly #answers: Array<FetchedDeclaration | Error>;

  constructor(answers: Array<FetchedDeclaration | Error>) {
    this.#answers = answers;
  }

  async fetchDeclaration(etag: string | undefined): Promise<FetchedDeclaration> {
    if (this.away) throw this.away;
    this.etagsAsked.push(etag);
    const answer = this.#answers.length > 1 ? this.#answers.shift() : this.#answers[0];
    if (answer instanceof Error) throw answer;
    return answer as FetchedDeclaration;
  }

  async sendReport(report: HostReport): Promise<void> {
    if (this.away) throw this.away;
    this.reports.push(report);
  }
}

/** Applies by revision: `fails` names the revisions whose apply command fails, with what it wrote on stderr. */
export class RecordingApplier implements Applier {
  readonly applied: Array<{ readonly revision: number; readonly body: string }> = [];
  readonly #fails: ReadonlyMap<number, string>;
  readonly #state: MemoryAgentState;

  constructor(state: MemoryAgentState, fails: ReadonlyMap<number, string> = new Map()) {
    this.#state = state;
    this.#fails = fails;
  }

  async apply(_path: string, revision: number): Promise<ApplyResult> {
    this.applied.push({ revision, body: this.#state.written.at(-1) ?? '' });
    const stderr = this.#fails.get(revision);
    return stderr === undefined
      ? { ok: true }
      : { ok: false, reason: 'the apply command exited 3', output: stderr };
  }
}

/** A check whose verdict a test sets (`healthy`, `output`); it counts its runs and the revisions it was asked about. */
export class ScriptedCheck implements HealthCheck {
  healthy = true;
  output = 'ok\n';
  readonly revisions: number[] = [];

  async check(_path: string, revision: number): Promise<CheckResult> {
    this.revisions.push(revision);
    return {
      healthy: this.healthy,
      reason: this.healthy ? 'the check exited 0' : 'the check exited 1',
      output: this.output,
    };
  }
}

export class MemoryAgentState implements AgentStateStore {
  state: AgentState;
  readonly written: string[] = [];
  good: GoodDeclaration | undefined;

  constructor(state: AgentState = { lastSequence: 0 }, good?: GoodDeclaration) {
    this.state = state;
    this.good = good;
  }
  async load() {
    return this.state;
  }
  async save(state: AgentState) {
    this.state = state;
  }
  async writeDeclaration(body: string) {
    this.written.push(body);
    return '/dir/declaration.json';
  }
  async readDeclaration() {
    return { path: '/dir/declaration.json', body: this.written.at(-1) };
  }
  async keepGood(good: GoodDeclaration) {
    this.good = good;
  }
  async lastGood() {
    return this.good;
  }
}

/** The declarations of these tests hold nothing sealed: each is handed on as it came. */
export const nothingSealed: DeclarationOpener = { open: async (body) => ({ ok: true, body }) };

/** Revision N of a node's declaration, its provision's secret named after it. */
export const changedTo = (revision: number): FetchedDeclaration => ({
  status: 'changed',
  etag: `"r${revision}"`,
  revision,
  body: JSON.stringify({
    node: 'web1',
    revision,
    modules: [{ name: 'web', version: `${revision}.0` }],
    provisions: [
      { module: 'web', provider: { node: 'db', module: 'pg' }, secret: `secret-of-revision-${revision}` },
    ],
    grants: [],
  }),
});
