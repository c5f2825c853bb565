import { describe, expect, it } from 'vitest';
import {
  ControlPlaneUnavailableError,
  CredentialRefusedError,
  SequenceAheadRefusedError,
} from '../../lib/clients/host/agent/errors.ts';
import type {
  AgentState,
  AgentStateStore,
  AgentUpgrader,
  Applier,
  ApplyResult,
  ControlPlane,
  DeclarationOpener,
  FetchedDeclaration,
  GoodDeclaration,
  HostReport,
  UpgradeAttempt,
} from '../../lib/clients/host/agent/ports.ts';
import { runHostAgent } from '../../lib/clients/host/agent/run-loop.ts';
import type { HostFacts } from '../../lib/server/core/mesh/host-facts.ts';

/** A control plane scripted answer by answer; each fetch takes the next, then repeats the last. */
class ScriptedControlPlane implements ControlPlane {
  readonly reports: HostReport[] = [];
  readonly etagsAsked: Array<string | undefined> = [];
  private readonly answers: Array<FetchedDeclaration | Error>;
  reportsFailWith: Error | undefined;
  /** Refuses reports whose sequence leads the control plane's clock past this, as 422 sequence_ahead does. */
  refuseAbove: { readonly sequence: number } | undefined;

  constructor(answers: Array<FetchedDeclaration | Error>) {
    this.answers = answers;
  }

  async fetchDeclaration(etag: string | undefined): Promise<FetchedDeclaration> {
    this.etagsAsked.push(etag);
    const answer = this.answers.length > 1 ? this.answers.shift() : this.answers[0];
    if (answer instanceof Error) throw answer;
    return answer as FetchedDeclaration;
  }

  async sendReport(report: HostReport): Promise<void> {
    if (this.reportsFailWith) throw this.reportsFailWith;
    if (this.refuseAbove && report.sequence > this.refuseAbove.sequence)
      throw new SequenceAheadRefusedError(
        `report ${report.sequence} is ahead of the clock`,
        this.refuseAbove.sequence,
      );
    this.reports.push(report);
  }
}

class RecordingApplier implements Applier {
  readonly applied: number[] = [];
  private readonly results: ApplyResult[];
  constructor(results: ApplyResult[] = [{ ok: true }]) {
    this.results = results;
  }
  async apply(_path: string, revision: number): Promise<ApplyResult> {
    this.applied.push(revision);
    return (this.results.length > 1 ? this.results.shift() : this.results[0]) as ApplyResult;
  }
}

class MemoryState implements AgentStateStore {
  state: AgentState;
  written: string[] = [];
  constructor(state: AgentState = { lastSequence: 0 }) {
    this.state = state;
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
  good: GoodDeclaration | undefined;
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
const nothingSealed: DeclarationOpener = { open: async (body) => ({ ok: true, body }) };

const changed = (revision: number): FetchedDeclaration => ({
  status: 'changed',
  etag: `"r${revision}"`,
  revision,
  body: `{"revision":${revision}}`,
});

/** Runs the loop on a fake clock until `sleeps` waits have happened; `onSleep` acts between them. */
async function runFor(
  sleeps: number,
  parts: {
    controlPlane: ControlPlane;
    opener?: DeclarationOpener;
    applier?: Applier;
    state?: MemoryState;
    heartbeatMs?: number;
    onSleep?: (count: number) => void;
    keyRefused?: () => Promise<boolean>;
    facts?: () => Promise<HostFacts>;
    upgrader?: AgentUpgrader;
  },
) {
  let clock = 1_000_000;
  const waits: number[] = [];
  const lines: string[] = [];
  const controller = new AbortController();
  const state = parts.state ?? new MemoryState();
  const ended = await runHostAgent({
    ...(parts.keyRefused ? { keyRefused: parts.keyRefused } : {}),
    ...(parts.facts ? { facts: parts.facts } : {}),
    ...(parts.upgrader ? { upgrader: parts.upgrader } : {}),
    controlPlane: parts.controlPlane,
    opener: parts.opener ?? nothingSealed,
    applier: parts.applier ?? new RecordingApplier(),
    state,
    intervalMs: 1_000,
    heartbeatMs: parts.heartbeatMs ?? 10_000_000,
    maxBackoffMs: 30_000,
    log: (said) => lines.push(said.message),
    signal: controller.signal,
    now: () => clock,
    random: () => 0.5,
    sleep: async (ms) => {
      waits.push(ms);
      clock += ms;
      parts.onSleep?.(waits.length);
      if (waits.length >= sleeps) controller.abort();
    },
  });
  return { waits, lines, state, ended };
}

describe('runHostAgent', () => {
  it('applies a changed declaration and reports applying then applied with a growing sequence', async () => {
    const controlPlane = new ScriptedControlPlane([changed(3), { status: 'unchanged' }]);
    const applier = new RecordingApplier();

    const { state, lines } = await runFor(3, { controlPlane, applier });

    expect(applier.applied).toEqual([3]);
    expect(controlPlane.reports.map((report) => [report.state, report.revision])).toEqual([
      ['applying', 3],
      ['applied', 3],
    ]);
    const [first, second] = controlPlane.reports;
    expect((second as HostReport).sequence).toBeGreaterThan((first as HostReport).sequence);
    expect(state.state).toMatchObject({ appliedEtag: '"r3"', appliedRevision: 3 });
    expect(controlPlane.etagsAsked.slice(1)).toEqual(['"r3"', '"r3"']);
    expect(lines).toContain('applied revision 3');
    expect(lines.some((line) => line.startsWith('up to date at revision 3'))).toBe(true);
  });

  it('names the declaration’s modules and versions in its applied and failed reports, not in applying', async () => {
    const body = JSON.stringify({
      node: 'web1',
      modules: [
        { name: 'app', version: '1.2.0', provides: null },
        { name: 'cache', version: null, provides: 'redis' },
      ],
      provisions: [],
      grants: [],
    });
    const controlPlane = new ScriptedControlPlane([
      { status: 'changed', etag: '"r7"', revision: 7, body },
      { status: 'changed', etag: '"r8"', revision: 8, body },
    ]);
    const applier = new RecordingApplier([{ ok: true }, { ok: false, reason: 'the apply command exited 1' }]);

    await runFor(2, { controlPlane, applier });

    expect(controlPlane.reports.map(({ state, revision, modules }) => [state, revision, modules])).toEqual([
      ['applying', 7, undefined],
      ['applied', 7, { app: '1.2.0', cache: null }],
      ['applying', 8, undefined],
      ['failed', 8, { app: '1.2.0', cache: null }],
    ]);
  });

  it('keeps its sequence growing across restarts, even when the clock is behind it', async () => {
    const controlPlane = new ScriptedControlPlane([changed(1)]);
    const state = new MemoryState({ lastSequence: 5_000_000 });

    await runFor(1, { controlPlane, state });

    expect(controlPlane.reports[0]?.sequence).toBe(5_000_001);
  });

  it('rides out a control plane that is away, backing off with jitter, then resumes', async () => {
    const away = new ControlPlaneUnavailableError('connection refused');
    const controlPlane = new ScriptedControlPlane([away, away, away, changed(2), { status: 'unchanged' }]);

    const { waits, lines } = await runFor(5, { controlPlane });

    expect(waits.slice(0, 3)).toEqual([1_500, 3_000, 6_000]);
    expect(controlPlane.reports.map((report) => report.state)).toEqual(['applying', 'applied']);
    expect(lines.some((line) => line.includes('control plane is back after 3 failed attempts'))).toBe(true);
  });

  it('honours Retry-After when the control plane says try again', async () => {
    const controlPlane = new ScriptedControlPlane([
      new ControlPlaneUnavailableError('try again', 8),
      { status: 'unchanged' },
    ]);

    const { waits } = await runFor(1, { controlPlane });

    expect(waits[0]).toBe(6_000);
  });

  it('reports a failed apply, leaves it unapplied and tries it again later', async () => {
    const controlPlane = new ScriptedControlPlane([changed(4)]);
    const applier = new RecordingApplier([{ ok: false, reason: 'the apply command exited 3' }, { ok: true }]);

    const { state } = await runFor(2, { controlPlane, applier });

    expect(applier.applied).toEqual([4, 4]);
    expect(controlPlane.reports.map((report) => report.state)).toEqual([
      'applying',
      'failed',
      'applying',
      'applied',
    ]);
    expect(controlPlane.reports[1]?.step).toBe('apply: the apply command exited 3');
    expect(state.state.appliedRevision).toBe(4);
  });

  it('hands the apply command the declaration as opened, and reports a copy that does not open without running it', async () => {
    const controlPlane = new ScriptedControlPlane([changed(5), changed(6), { status: 'unchanged' }]);
    const applier = new RecordingApplier();
    const state = new MemoryState();
    const opener: DeclarationOpener = {
      open: async (body) =>
        body.includes('"revision":5')
          ? {
              ok: false,
              reason:
                "the sealed copy for the consumer web1 of web1/nginx->broker/rabbit (generation g1) does not open with this node's sealing key",
            }
          : { ok: true, body: '{"opened":6}' },
    };

    const { lines } = await runFor(3, { controlPlane, opener, applier, state });

    expect(applier.applied).toEqual([6]);
    expect(state.written).toEqual(['{"opened":6}']);
    expect(controlPlane.reports.map((report) => [report.state, report.revision])).toEqual([
      ['failed', 5],
      ['applying', 6],
      ['applied', 6],
    ]);
    expect(controlPlane.reports[0]?.step).toMatch(
      /^open: the sealed copy for the consumer web1 .* does not open/,
    );
    expect(
      lines.some((line) =>
        line.startsWith('cannot open the secrets of revision 5, the apply command is not run'),
      ),
    ).toBe(true);
  });

  it('keeps a report it could not send and sends it when the control plane is back', async () => {
    const controlPlane = new ScriptedControlPlane([changed(6), { status: 'unchanged' }]);
    controlPlane.reportsFailWith = new ControlPlaneUnavailableError('connection refused');
    await runFor(4, {
      controlPlane,
      onSleep: (count) => {
        if (count === 2) controlPlane.reportsFailWith = undefined;
      },
    });

    expect(controlPlane.reports.map((report) => [report.state, report.revision])).toEqual([['applied', 6]]);
  });

  it('says it is still here when nothing changes for a heartbeat interval', async () => {
    const controlPlane = new ScriptedControlPlane([changed(2), { status: 'unchanged' }]);

    await runFor(6, { controlPlane, heartbeatMs: 3_000 });

    expect(controlPlane.reports.map((report) => report.state)).toEqual(['applying', 'applied', 'heartbeat']);
    expect(controlPlane.reports[2]?.revision).toBe(2);
  });
});

describe('runHostAgent facts', () => {
  const machine: HostFacts = {
    os: 'debian-12',
    kernel: '6.1.0-18-amd64',
    arch: 'x64',
    agent: '1.4.0',
    cpus: 2,
    memoryBytes: 4 * 1024 ** 3,
    bootedAt: '2026-11-01T09:00:00.000Z',
  };

  it('says its facts once after it starts, again only when they change, and in the reports it sends meanwhile', async () => {
    const controlPlane = new ScriptedControlPlane([
      { status: 'unchanged' },
      changed(4),
      { status: 'unchanged' },
    ]);
    let facts = machine;
    let reads = 0;

    // A wait is a second of the fake clock: past a minute, the facts are read again.
    await runFor(90, {
      controlPlane,
      state: new MemoryState({ lastSequence: 0, appliedEtag: '"r3"', appliedRevision: 3 }),
      facts: async () => {
        reads += 1;
        return facts;
      },
      onSleep: (count) => {
        // A minute later the agent reads them again: memory was added.
        if (count === 3) facts = { ...machine, memoryBytes: 8 * 1024 ** 3 };
      },
    });

    const said = controlPlane.reports.map((report) => [
      report.state,
      report.revision,
      report.facts?.memoryBytes,
    ]);
    expect(said[0]).toEqual(['heartbeat', 3, 4 * 1024 ** 3]);
    expect(said.slice(1, 3)).toEqual([
      ['applying', 4, undefined],
      ['applied', 4, undefined],
    ]);
    expect(said.filter(([, , memory]) => memory === 8 * 1024 ** 3)).toHaveLength(1);
    expect(reads).toBeGreaterThan(1);
  });

  it('says them again when the report that carried them was not taken', async () => {
    const controlPlane = new ScriptedControlPlane([{ status: 'unchanged' }]);
    controlPlane.reportsFailWith = new ControlPlaneUnavailableError('the queue is away');

    await runFor(4, {
      controlPlane,
      facts: async () => machine,
      onSleep: (count) => {
        if (count === 2) controlPlane.reportsFailWith = undefined;
      },
    });

    expect(controlPlane.reports.map((report) => [report.state, report.facts?.agent])).toEqual([
      ['heartbeat', '1.4.0'],
    ]);
  });
});

describe('runHostAgent heartbeats', () => {
  it('sends no heartbeat before one interval has passed since it started', async () => {
    const controlPlane = new ScriptedControlPlane([{ status: 'unchanged' }]);

    await runFor(2, { controlPlane, heartbeatMs: 3_000 });

    expect(controlPlane.reports).toEqual([]);
  });

  it('never lets a heartbeat replace an applied report that is waiting to be sent', async () => {
    const controlPlane = new ScriptedControlPlane([changed(8), { status: 'unchanged' }]);
    controlPlane.reportsFailWith = new ControlPlaneUnavailableError('the queue is away');
    await runFor(5, {
      controlPlane,
      heartbeatMs: 1_000,
      onSleep: (count) => {
        if (count === 4) controlPlane.reportsFailWith = undefined;
      },
    });

    expect(controlPlane.reports[0]).toMatchObject({ state: 'applied', revision: 8 });
  });

  it('stops as decommissioned when its key is no longer enrolled and no rotation left a newer one', async () => {
    const refused = new CredentialRefusedError(
      'not_enrolled',
      'node a has no completed enrolment for this key',
    );
    const controlPlane = new ScriptedControlPlane([changed(1), refused]);
    let asked = 0;

    const { ended, lines, waits } = await runFor(5, {
      controlPlane,
      keyRefused: async () => {
        asked += 1;
        return false;
      },
    });

    expect(ended).toBe('decommissioned');
    expect(asked).toBe(1);
    expect(waits.length).toBeLessThan(5);
    expect(lines.at(-1)).toMatch(/no longer knows this node's key .* disenrolled or removed .* stopping/);
  });

  it('goes on at once with the newer key a rotation left, and keeps waiting out other refusals', async () => {
    const notEnrolled = new CredentialRefusedError('not_enrolled', 'no completed enrolment for this key');
    const stale = new CredentialRefusedError('proof_stale', 'the proof was made 90 s from now');
    const controlPlane = new ScriptedControlPlane([changed(1), notEnrolled, stale, changed(2)]);

    const { ended, lines } = await runFor(4, { controlPlane, keyRefused: async () => true });

    expect(ended).toBe('stopped');
    expect(lines).toContain('the control plane took a newer key of this node (a rotation); going on with it');
    expect(lines.some((line) => line.includes('proof_stale') || line.includes('90 s from now'))).toBe(true);
    expect(lines).toContain('applied revision 2');
  });
});

describe('runHostAgent report sequence', () => {
  it('counts its sequence again from its clock when the control plane says it leads the clock, and is recorded', async () => {
    // Prepare: a state file from a clock that once ran far ahead.
    const controlPlane = new ScriptedControlPlane([changed(5), { status: 'unchanged' }]);
    controlPlane.refuseAbove = { sequence: 5_000_000 };
    const state = new MemoryState({ lastSequence: 9e15 });
    // Act
    const { lines } = await runFor(3, { controlPlane, state });
    // Assess
    expect(controlPlane.reports.map((report) => [report.state, report.revision])).toEqual([
      ['applying', 5],
      ['applied', 5],
    ]);
    expect(controlPlane.reports.map((report) => report.sequence)).toEqual([1_000_000, 1_000_001]);
    expect(state.state.lastSequence).toBe(1_000_001);
    expect(lines).toContainEqual(
      expect.stringMatching(/leads the control plane's clock.*counting again from this host's clock/),
    );
  });
});

describe('a declaration naming an agent version', () => {
  const naming = (revision: number, version: string): FetchedDeclaration => ({
    status: 'changed',
    etag: `"r${revision}"`,
    revision,
    body: JSON.stringify({ node: 'web1', modules: [], agent: { version } }),
  });
  const upgrader = (answer: UpgradeAttempt) => {
    const asked: string[] = [];
    return {
      asked,
      version: '1.0.0',
      upgrade: async (version: string) => {
        asked.push(version);
        return answer;
      },
    };
  };

  it('another version is installed, nothing applied, and the loop ends for the supervisor to start it', async () => {
    const controlPlane = new ScriptedControlPlane([naming(4, '2.0.0')]);
    const applier = new RecordingApplier();
    const installing = upgrader({ installed: true });
    const { ended, lines, state } = await runFor(5, { controlPlane, applier, upgrader: installing });
    expect(ended).toBe('upgrading');
    expect(installing.asked).toEqual(['2.0.0']);
    expect(applier.applied).toEqual([]);
    expect(state.state.appliedEtag).toBeUndefined();
    expect(lines).toContain(
      'revision 4 names agent 2.0.0: installed it as the trial; stopping for the supervisor to start it',
    );
  });

  it('its own version is applied as any declaration', async () => {
    const controlPlane = new ScriptedControlPlane([naming(4, '1.0.0'), { status: 'unchanged' }]);
    const applier = new RecordingApplier();
    const installing = upgrader({ installed: true });
    const { ended } = await runFor(3, { controlPlane, applier, upgrader: installing });
    expect(ended).toBe('stopped');
    expect(installing.asked).toEqual([]);
    expect(applier.applied).toEqual([4]);
  });

  it('a version it cannot take (refused, rolled back) fails the revision with why, once, and waits for a newer one', async () => {
    const controlPlane = new ScriptedControlPlane([naming(4, '2.0.0')]);
    const applier = new RecordingApplier();
    const refusing = upgrader({
      installed: false,
      reason: 'agent 2.0.0 was rolled back: it exited 3 before it reported',
    });
    const { ended, state } = await runFor(4, { controlPlane, applier, upgrader: refusing });
    expect(ended).toBe('stopped');
    expect(applier.applied).toEqual([]);
    expect(refusing.asked).toEqual(['2.0.0']);
    expect(controlPlane.reports.map((r) => [r.state, r.revision, r.step])).toEqual([
      ['failed', 4, 'agent: agent 2.0.0 was rolled back: it exited 3 before it reported'],
    ]);
    expect(state.state.revertedEtag).toBe('"r4"');
  });
});
