import { describe, expect, it } from 'vitest';
import { ControlPlaneUnavailableError } from '../../lib/clients/host/agent/errors.ts';
import type { FetchedDeclaration, HostReport } from '../../lib/clients/host/agent/ports.ts';
import { type RunLoopOptions, runHostAgent } from '../../lib/clients/host/agent/run-loop.ts';
import {
  changedTo,
  MemoryAgentState,
  nothingSealed,
  RecordingApplier,
  ScriptedCheck,
  ScriptedControlPlane,
} from '../support/host-agent-fakes.ts';

const start = 1_000_000;

/**
 * Runs the agent on a fake clock until `untilMs` of it have passed; `at` acts when the clock
 * passes each of its times (the clock moves only by the loop's own waits).
 */
async function runUntil(
  untilMs: number,
  parts: {
    controlPlane: ScriptedControlPlane;
    state?: MemoryAgentState;
    applier?: RecordingApplier;
    check?: ScriptedCheck;
    graceMs?: number;
    intervalMs?: number;
    at?: Record<number, () => void>;
    more?: Partial<RunLoopOptions>;
  },
) {
  let clock = start;
  const lines: string[] = [];
  const controller = new AbortController();
  const state = parts.state ?? new MemoryAgentState();
  const applier = parts.applier ?? new RecordingApplier(state);
  const pending = new Map(Object.entries(parts.at ?? {}).map(([ms, act]) => [Number(ms), act]));
  await runHostAgent({
    controlPlane: parts.controlPlane,
    opener: nothingSealed,
    applier,
    state,
    intervalMs: 1_000,
    heartbeatMs: 10_000_000,
    maxBackoffMs: 5_000,
    health: {
      check: parts.check,
      intervalMs: parts.intervalMs ?? 5_000,
      graceMs: parts.graceMs ?? 3_000,
    },
    log: (said) => lines.push(said.message),
    signal: controller.signal,
    now: () => clock,
    random: () => 0.5,
    sleep: async (ms) => {
      clock += Math.max(ms, 1);
      for (const [when, act] of pending)
        if (clock - start >= when) {
          pending.delete(when);
          act();
        }
      if (clock - start >= untilMs) controller.abort();
    },
    ...parts.more,
  });
  return { lines, state, applier };
}

const brief = (report: HostReport) =>
  `${report.state} ${report.revision} ${report.health?.state ?? '-'}${report.health?.check ? '+check' : ''}@${report.health?.revision ?? '-'}${report.revert ? ` revert->${report.revert.to} (${report.revert.cause}${report.revert.ok ? '' : ', failed'})` : ''}`;
const unchanged: FetchedDeclaration = { status: 'unchanged' };

describe('health', () => {
  it('after an apply the verdict is owed: reported checking, then healthy once the check passes; the revision is kept as the last good', async () => {
    const controlPlane = new ScriptedControlPlane([changedTo(3), unchanged]);
    const check = new ScriptedCheck();
    check.healthy = false;

    const { state } = await runUntil(2_500, {
      controlPlane,
      check,
      at: { 1200: () => (check.healthy = true) },
    });

    expect(controlPlane.reports.map(brief)).toEqual([
      'applying 3 unknown+check@0',
      'applied 3 unknown+check@3',
      'heartbeat 3 healthy+check@3',
    ]);
    expect(check.revisions.every((revision) => revision === 3)).toBe(true);
    expect(state.good).toMatchObject({ revision: 3, etag: '"r3"' });
    expect(controlPlane.reports[2]?.health?.checkedAt).toBeDefined();
  });

  it('a check that does not pass within the grace after an apply: unhealthy, why and its output said, every secret of the declaration redacted', async () => {
    const controlPlane = new ScriptedControlPlane([changedTo(3), unchanged]);
    const check = new ScriptedCheck();
    check.healthy = false;
    check.output = 'connecting with secret-of-revision-3\nrefused\n';

    const { state, lines } = await runUntil(4_000, { controlPlane, check, graceMs: 3_000 });

    const last = controlPlane.reports.at(-1);
    expect(controlPlane.reports.map(brief)).toEqual([
      'applying 3 unknown+check@0',
      'applied 3 unknown+check@3',
      'heartbeat 3 unhealthy+check@3',
    ]);
    expect(last?.health?.reason).toBe('connecting with [redacted]');
    expect(last?.output?.check).toBe('connecting with [redacted]\nrefused\n');
    expect(JSON.stringify(controlPlane.reports)).not.toContain('secret-of-revision');
    expect(state.good).toBeUndefined();
    expect(lines).toContain('unhealthy at revision 3: connecting with [redacted]');
  });

  it('a healthy node whose check starts failing turns unhealthy only once it has failed for the grace, and healthy again when it passes', async () => {
    const controlPlane = new ScriptedControlPlane([changedTo(3), unchanged]);
    const check = new ScriptedCheck();

    await runUntil(30_000, {
      controlPlane,
      check,
      intervalMs: 5_000,
      graceMs: 3_000,
      at: { 6000: () => (check.healthy = false), 20000: () => (check.healthy = true) },
    });

    expect(controlPlane.reports.map(brief)).toEqual([
      'applying 3 unknown+check@0',
      'applied 3 unknown+check@3',
      'heartbeat 3 healthy+check@3',
      'heartbeat 3 unhealthy+check@3',
      'heartbeat 3 healthy+check@3',
    ]);
    const turned = controlPlane.reports[3]?.sentAt ?? '';
    // The first failing run is at 10 s (the interval after 5 s); unhealthy 3 s of failing later.
    expect(Date.parse(turned) - start).toBeGreaterThanOrEqual(13_000);
    expect(Date.parse(turned) - start).toBeLessThan(15_000);
  });

  it('with no check, health is unknown and applied is good; a start with a revision applied checks it again', async () => {
    const noCheck = new ScriptedControlPlane([changedTo(2), unchanged]);
    const { state } = await runUntil(2_000, { controlPlane: noCheck });
    expect(noCheck.reports.map(brief)).toEqual(['applying 2 unknown@0', 'applied 2 unknown@2']);
    expect(state.good).toMatchObject({ revision: 2 });

    const restarted = new ScriptedControlPlane([unchanged]);
    const check = new ScriptedCheck();
    await runUntil(2_000, { controlPlane: restarted, check, state: new MemoryAgentState(state.state) });
    expect(restarted.reports.map(brief)).toEqual(['heartbeat 2 healthy+check@2']);
  });

  it('never lets a health report replace a state report still waiting to be sent: that one goes with the health', async () => {
    const controlPlane = new ScriptedControlPlane([changedTo(4), unchanged]);
    const check = new ScriptedCheck();
    controlPlane.away = new ControlPlaneUnavailableError('the queue is away');
    // Fetches go through; reports do not until 6 s, when the check has long passed.
    await runUntil(8_000, {
      controlPlane,
      check,
      at: { 6000: () => (controlPlane.away = undefined) },
      more: {
        controlPlane: {
          fetchDeclaration: (etag) => {
            const away = controlPlane.away;
            controlPlane.away = undefined;
            const answer = controlPlane.fetchDeclaration(etag);
            controlPlane.away = away;
            return answer;
          },
          sendReport: (report) => controlPlane.sendReport(report),
        },
      },
    });

    expect(controlPlane.reports.map(brief)[0]).toBe('applied 4 healthy+check@4');
  });
});

describe('--revert-on-failure', () => {
  const goodAt = (revision: number) => ({
    state: new MemoryAgentState(
      { lastSequence: 0, appliedEtag: `"r${revision}"`, appliedRevision: revision },
      {
        revision,
        etag: `"r${revision}"`,
        body: changedTo(revision).status === 'changed' ? (changedTo(revision) as { body: string }).body : '',
      },
    ),
  });

  it('a new declaration whose apply command fails: the last good is applied again, reported with the failure; the one given up is not applied again, a newer one is', async () => {
    const { state } = goodAt(1);
    const applier = new RecordingApplier(
      state,
      new Map([[2, 'could not bind :80 (password secret-of-revision-2)\n']]),
    );
    const controlPlane = new ScriptedControlPlane([
      changedTo(2),
      changedTo(2),
      changedTo(2),
      changedTo(3),
      unchanged,
    ]);

    const { lines } = await runUntil(20_000, {
      controlPlane,
      state,
      applier,
      more: { revertOnFailure: true },
    });

    expect(applier.applied.map((a) => a.revision)).toEqual([2, 1, 3]);
    expect(applier.applied[1]?.body).toContain('secret-of-revision-1');
    const given = controlPlane.reports.find((report) => report.revert);
    expect(given).toMatchObject({
      state: 'failed',
      revision: 2,
      step: 'apply: the apply command exited 3',
      modules: { web: '2.0' },
      revert: { to: 1, cause: 'failed', ok: true, modules: { web: '1.0' } },
      output: { apply: 'could not bind :80 (password [redacted])\n' },
    });
    expect(lines).toContain('revision 2 was given up for revision 1; waiting for a newer one');
    expect(state.state).toMatchObject({ appliedRevision: 3, appliedEtag: '"r3"' });
    expect(state.state.revertedEtag).toBeUndefined();
    expect(controlPlane.reports.at(-1)).toMatchObject({ state: 'applied', revision: 3 });
  });

  it('a new declaration that does not pass its check within the grace is given up for the last good, which is judged again', async () => {
    const { state } = goodAt(1);
    const check = new ScriptedCheck();
    const controlPlane = new ScriptedControlPlane([changedTo(2), unchanged]);
    const applier = new RecordingApplier(state);

    await runUntil(12_000, {
      controlPlane,
      state,
      applier,
      check,
      graceMs: 3_000,
      more: { revertOnFailure: true },
      // The new revision breaks the service; once back on revision 1, it works again.
      at: {
        1: () => (check.healthy = false),
        4500: () => (check.healthy = true),
      },
    });

    expect(applier.applied.map((a) => a.revision)).toEqual([2, 1]);
    expect(controlPlane.reports.map(brief)).toEqual([
      // A start judges the revision applied.
      'heartbeat 1 healthy+check@1',
      'applying 2 healthy+check@1',
      'applied 2 unknown+check@2',
      'failed 2 unknown+check@1 revert->1 (unhealthy)',
      'heartbeat 1 healthy+check@1',
    ]);
    expect(controlPlane.reports[3]?.step).toBe('unhealthy: ok');
    expect(state.state).toMatchObject({ appliedRevision: 1, revertedEtag: '"r2"' });
    expect(state.good).toMatchObject({ revision: 1 });
  });

  it('with no earlier good declaration, a failure is reported as before and tried again', async () => {
    const state = new MemoryAgentState();
    const applier = new RecordingApplier(state, new Map([[2, 'boom\n']]));
    const controlPlane = new ScriptedControlPlane([changedTo(2)]);

    const { lines } = await runUntil(7_000, {
      controlPlane,
      state,
      applier,
      more: { revertOnFailure: true },
    });

    expect(applier.applied.map((a) => a.revision)).toEqual([2, 2]);
    expect(controlPlane.reports.some((report) => report.revert)).toBe(false);
    expect(controlPlane.reports[1]).toMatchObject({ state: 'failed', output: { apply: 'boom\n' } });
    expect(lines).toContain(
      'revision 2: its apply command failed, and there is no earlier good declaration to go back to',
    );
  });

  it('without --revert-on-failure nothing is applied again: the failure is reported and the revision tried later', async () => {
    const { state } = goodAt(1);
    const applier = new RecordingApplier(state, new Map([[2, 'boom\n']]));
    const controlPlane = new ScriptedControlPlane([changedTo(2)]);

    await runUntil(7_000, { controlPlane, state, applier });

    expect(applier.applied.map((a) => a.revision)).toEqual([2, 2]);
    expect(state.state.appliedRevision).toBe(1);
  });
});

describe('--revert-after-cutoff', () => {
  const cutoff = { revertAfterCutoffMs: 10_000 };
  const good = () =>
    new MemoryAgentState(
      { lastSequence: 0, appliedEtag: '"r1"', appliedRevision: 1 },
      { revision: 1, etag: '"r1"', body: (changedTo(1) as { body: string }).body },
    );

  it('a change after which the control plane cannot be reached for the cut-off is given up for the last good, and reported when it can be', async () => {
    const state = good();
    const controlPlane = new ScriptedControlPlane([changedTo(2), unchanged]);
    const applier = new RecordingApplier(state);
    // The change cuts the node off: from the moment it is applied, nothing reaches the control plane.
    const cutOff = () => applier.applied.at(-1)?.revision === 2;
    const cutting = {
      fetchDeclaration: async (etag: string | undefined) => {
        if (cutOff()) throw new ControlPlaneUnavailableError('ETIMEDOUT');
        return controlPlane.fetchDeclaration(etag);
      },
      sendReport: async (report: HostReport) => {
        if (cutOff()) throw new ControlPlaneUnavailableError('ETIMEDOUT');
        return controlPlane.sendReport(report);
      },
    };

    const { lines } = await runUntil(30_000, {
      controlPlane,
      state,
      applier,
      more: { ...cutoff, controlPlane: cutting },
    });

    expect(applier.applied.map((a) => a.revision)).toEqual([2, 1]);
    expect(lines).toContain('the control plane could not be reached for 10 s after revision 2 was applied');
    expect(controlPlane.reports.map(brief)).toEqual([
      'applying 2 unknown@1',
      'failed 2 unknown@1 revert->1 (cut-off)',
    ]);
    expect(controlPlane.reports[1]?.step).toBe(
      'cut-off: the control plane could not be reached for 10 s after revision 2 was applied',
    );
    expect(state.state).toMatchObject({ appliedRevision: 1, revertedEtag: '"r2"' });
  });

  it('a control plane reached after the apply keeps the change; off by default, nothing is reverted however long it is away', async () => {
    const reached = good();
    const fine = new ScriptedControlPlane([changedTo(2), unchanged]);
    const keeps = new RecordingApplier(reached);
    await runUntil(30_000, { controlPlane: fine, state: reached, applier: keeps, more: cutoff });
    expect(keeps.applied.map((a) => a.revision)).toEqual([2]);

    const offByDefault = good();
    const away = new ScriptedControlPlane([changedTo(2), unchanged]);
    const applier = new RecordingApplier(offByDefault);
    await runUntil(60_000, {
      controlPlane: away,
      state: offByDefault,
      applier,
      at: { 1: () => (away.away = new ControlPlaneUnavailableError('ETIMEDOUT')) },
    });
    expect(applier.applied.map((a) => a.revision)).toEqual([2]);
    expect(offByDefault.state.appliedRevision).toBe(2);
  });
});
