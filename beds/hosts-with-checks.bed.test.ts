import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { ExitCode } from '../lib/clients/common/exit-codes.ts';
import type { AuditRecord } from '../lib/server/core/audit/record.ts';
import type { RolloutRecord } from '../lib/server/core/rollout/record.ts';
import type { Summary } from '../lib/server/core/summary/summary.ts';
import type { NodeStatus } from '../lib/server/core/views/ports.ts';
import {
  addAndEnrol,
  appliedAsSent,
  appliedVersion,
  type Bed,
  checkHook,
  eventually,
  expectOk,
  inBed,
} from './support/bed.ts';

/** The check runs every second and a node is unhealthy after two seconds of failing: a bed's pace. */
const checked = ['--check', checkHook, '--check-interval', '1', '--check-grace', '2'];

const statusOf = async (bed: Bed, query = '') => {
  const { nodes } = await bed.api().call<{ nodes: NodeStatus[] }>('GET', `/status${query}`);
  bed.noteLook(`GET /status${query}`, nodes);
  return new Map(nodes.map((entry) => [entry.node, entry]));
};
const appliedLog = (bed: Bed, node: string) =>
  readFileSync(join(bed.recordDir(node), 'applied.log'), 'utf8')
    .trim()
    .split('\n')
    .map(Number);

/**
 * Hosts that run a check (docs/host-agent.md, "Health"). web-1 and web-2 carry `web`, whose
 * `2.0-sick` starts and then dies 10 s after it is applied; web-2 applies it slowly, so its wave
 * is still in flight when web-1, of the wave before, turns unhealthy: the rollout halts on it,
 * and `mesh status --unhealthy` names web-1. web-3 carries `api` and runs with
 * `--revert-on-failure`: `api 3.0-broken` never passes its check, so web-3 goes back to the last
 * revision that was applied and healthy, and says so, audited. The upgrade runs with
 * `--auto-undo`: its halt takes it back, web-1 and web-2 sent web 1.0 again in its waves.
 */
it('a node whose check fails after an apply turns unhealthy and halts its rollout; a host with --revert-on-failure goes back to its last good revision', () =>
  inBed('hosts-with-checks', async (bed) => {
    await bed.startControlPlane();
    for (const node of ['web-1', 'web-2', 'web-3']) await addAndEnrol(bed, node);
    for (const node of ['web-1', 'web-2']) {
      await expectOk(bed.mesh('assign', node, 'web'), `assign ${node} web`);
      writeFileSync(join(bed.recordDir(node), 'sick-on'), 'web=2.0-sick after=10\n');
    }
    writeFileSync(join(bed.recordDir('web-2'), 'slow-on'), 'web=2.0-sick 30000\n');
    await expectOk(bed.mesh('assign', 'web-3', 'api'), 'assign web-3 api');
    writeFileSync(join(bed.recordDir('web-3'), 'sick-on'), 'api=3.0-broken\n');
    bed.startHost('web-1', { args: checked });
    bed.startHost('web-2', { args: checked });
    bed.startHost('web-3', { args: [...checked, '--revert-on-failure'] });
    // web at 1.0 first: the version an undo of the next upgrade sets back
    await expectOk(bed.mesh('upgrade', 'web', '1.0'), 'mesh upgrade web 1.0');
    await eventually('web-1 and web-2 at web 1.0', () =>
      ['web-1', 'web-2'].every((node) => appliedVersion(bed, node, 'web') === '1.0') ? true : undefined,
    );
    await expectOk(bed.mesh('push', '--behind'), 'mesh push --behind');
    await appliedAsSent(bed, ['web-1', 'web-2', 'web-3']);
    await eventually('the three hosts to report healthy', async () => {
      const all = await statusOf(bed);
      return ['web-1', 'web-2', 'web-3'].every((node) => all.get(node)?.health?.state === 'healthy')
        ? true
        : undefined;
    });
    const good = (await statusOf(bed)).get('web-3')?.appliedRevision;

    // A change that dies 10 s after it is applied halts the rollout it came in, from a later wave.
    const sick = await bed.mesh(
      'upgrade',
      'web',
      '2.0-sick',
      '--waves',
      '1,100%',
      '--max-failures',
      '0',
      '--auto-undo',
    );
    expect({ exit: sick.code, output: sick.output }).toMatchObject({ exit: ExitCode.rolloutHalted });
    const halted = sick.json as RolloutRecord;
    expect(halted.reason).toMatch(
      /1 failure, more than --max-failures 0 .*web-1 failed at unhealthy: web 2.0-sick: connection refused on :8080/,
    );
    expect(halted.turnedUnhealthy).toEqual([
      expect.objectContaining({
        node: 'web-1',
        state: 'failed',
        step: 'unhealthy: web 2.0-sick: connection refused on :8080',
      }),
    ]);
    // --auto-undo may heal web-1 before these reads: while it is sick they show why; once healed,
    // its rollout is the one the undo took back (the health display is held by health-reports.test.ts)
    const unhealthy = await expectOk(bed.meshText('status', '--unhealthy'), 'mesh status --unhealthy');
    const shown = await expectOk(bed.meshText('node', 'show', 'web-1'), 'mesh node show web-1');
    const listed = unhealthy.output.split('\n').filter((line) => /^web-\d/.test(line));
    expect(listed.map((line) => line.split(' ')[0])).not.toContain('web-3');
    if (listed.some((line) => line.startsWith('web-1 '))) {
      expect(listed.find((line) => line.startsWith('web-1'))).toContain(
        'UNHEALTHY: web 2.0-sick: connection refused on :8080',
      );
      if (/health\s+UNHEALTHY/.test(shown.output)) {
        expect(shown.output).toMatch(
          /health\s+UNHEALTHY: web 2.0-sick: connection refused on :8080 \(revision \d+, since /,
        );
        expect(shown.output).toContain('check output (its end):');
      }
    } else {
      const record = await bed.api().call<RolloutRecord>('GET', `/rollouts/${halted.id}`);
      expect(['undone', 'halted']).toContain(record.state);
      expect(record.undoneBy).toBeDefined();
    }
    // The summary counts web-1 as unhealthy once the aggregator has taken its report; --auto-undo
    // may already have made it healthy again, so the count is read while web-1 is still sick.
    await eventually('the summary to count web-1 unhealthy, or web-1 healthy again', async () => {
      const summary = await expectOk(bed.mesh('status', '--summary'), 'mesh status --summary');
      if ((summary.json as Summary).health.unhealthy >= 1) return 'counted';
      return (await statusOf(bed)).get('web-1')?.health?.state === 'healthy' ? 'healed first' : undefined;
    });
    const rollout = await bed.meshText('rollout', 'show', halted.id);
    expect(rollout.output).toContain('web-1 failed at unhealthy: web 2.0-sick');

    // --auto-undo: the halt asks for its undo, which sends web-1 and web-2 web 1.0 again in the
    // upgrade's own waves; web-1 applies it and its check passes again
    const undone = await eventually('the upgrade undone by its --auto-undo', async () => {
      const record = await bed.api().call<RolloutRecord>('GET', `/rollouts/${halted.id}`);
      return record.state === 'undone' && record.undoneBy ? record : undefined;
    });
    await eventually('the undo rollout done', async () => {
      const record = await bed.api().call<RolloutRecord>('GET', `/rollouts/${undone.undoneBy}`);
      return record.state === 'done' ? record : undefined;
    });
    expect(['web-1', 'web-2'].map((node) => appliedVersion(bed, node, 'web'))).toEqual(['1.0', '1.0']);
    await eventually('web-1 healthy again on web 1.0', async () =>
      (await statusOf(bed)).get('web-1')?.health?.state === 'healthy' ? true : undefined,
    );
    // The summary follows the health back: the sick count is retracted when web-1 heals.
    const healed = await eventually('the summary to count the three hosts healthy', async () => {
      const summary = (await expectOk(bed.mesh('status', '--summary'), 'mesh status --summary'))
        .json as Summary;
      return summary.health.unhealthy === 0 && summary.health.healthy >= 3 ? summary : undefined;
    });
    expect(healed.health.unhealthy).toBe(0);
    const undoneShown = await bed.meshText('rollout', 'show', halted.id);
    expect(undoneShown.code).toBe(ExitCode.rolloutUndone);
    expect(undoneShown.output).toContain(`undone by rollout ${undone.undoneBy}`);

    // A change that never passes its check: the host goes back to the last good revision.
    await expectOk(bed.mesh('upgrade', 'api', '3.0-broken'), 'mesh upgrade api 3.0-broken');
    const reverted = await eventually('web-3 to report its revert', async () => {
      const entry = (await statusOf(bed)).get('web-3');
      return entry?.revert ? entry : undefined;
    });
    expect(reverted).toMatchObject({
      reportState: 'failed',
      appliedRevision: good,
      revert: { to: good, cause: 'unhealthy', ok: true },
    });
    const broken = reverted.revert?.from ?? 0;
    expect(broken).toBeGreaterThan(good ?? 0);
    // The hook applied the broken revision, then the good one again.
    expect(appliedLog(bed, 'web-3').slice(-2)).toEqual([broken, good]);
    await eventually('web-3 to be healthy again on its last good revision', async () => {
      const health = (await statusOf(bed)).get('web-3')?.health;
      return health?.state === 'healthy' && health.revision === good ? true : undefined;
    });
    const show = await expectOk(bed.meshText('node', 'show', 'web-3'), 'mesh node show web-3');
    expect(show.output).toContain(
      `revision ${broken} given up for ${good}, the last applied and healthy: its check did not pass`,
    );
    const status = await expectOk(bed.meshText('status'), 'mesh status');
    expect(status.output).toMatch(new RegExp(`web-3 .*reverted ${broken} -> ${good} \\(unhealthy\\)`));
    const audited = await expectOk(
      bed.mesh('audit', '--node', 'web-3', '--action', 'node.revert'),
      'mesh audit --node web-3 --action node.revert',
    );
    expect((audited.json as { records: AuditRecord[] }).records).toEqual([
      expect.objectContaining({
        action: 'node.revert',
        principal: expect.stringMatching(/^key:/),
        details: expect.objectContaining({ from: broken, to: good, cause: 'unhealthy' }),
      }),
    ]);
    // Given up for good: the host does not apply the broken revision again.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(appliedLog(bed, 'web-3').at(-1)).toBe(good);
  }));
