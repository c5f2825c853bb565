import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { ExitCode } from '../lib/clients/common/exit-codes.ts';
import type { RolloutRecord } from '../lib/server/core/rollout/record.ts';
import {
  addAndEnrol,
  appliedAsSent,
  appliedVersion,
  type Bed,
  eventually,
  expectOk,
  inBed,
  status,
} from './support/bed.ts';

const hosts = ['web-1', 'web-2', 'web-3', 'web-4', 'web-5', 'web-6'];
const failed = (bed: Bed, node: string) => {
  const log = join(bed.recordDir(node), 'failed.log');
  return existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : [];
};

/**
 * An upgrade in waves (docs/decisions/rollouts-in-waves.md) over six enrolled hosts whose hook
 * fails when `web` is at `2.0-bad`: the first wave's one host fails, the rollout halts there with
 * the other five never sent it, `mesh rollout show` says why, and the next upgrade in waves
 * reaches all six.
 */
it('a bad upgrade in waves halts after its first wave; the good one after it reaches every host', () =>
  inBed('upgrade-in-waves', async (bed) => {
    await bed.startControlPlane();
    for (const node of hosts) {
      await addAndEnrol(bed, node);
      await expectOk(bed.mesh('assign', node, 'web'), `assign ${node} web`);
      writeFileSync(join(bed.recordDir(node), 'fail-on'), 'web=2.0-bad\n');
      bed.startHost(node);
    }
    await expectOk(bed.mesh('push', '--behind'), 'mesh push --behind');
    await appliedAsSent(bed, hosts);
    const before = await status(bed);

    const bad = await bed.mesh('upgrade', 'web', '2.0-bad', '--waves', '1,100%', '--max-failures', '0');
    expect({ exit: bad.code, output: bad.output }).toMatchObject({ exit: ExitCode.rolloutHalted });
    const halted = bad.json as RolloutRecord;
    expect(halted.state).toBe('halted');
    expect(halted.waves[0]?.nodes).toEqual([
      expect.objectContaining({ node: 'web-1', state: 'failed', step: expect.stringContaining('apply') }),
    ]);
    expect(hosts.filter((node) => failed(bed, node).length > 0)).toEqual(['web-1']);
    const after = await status(bed);
    const rest = hosts.slice(1);
    // the five were never sent the bad version: their revision is the one before; an upgrade in
    // waves sets a wave's version as it sends it, so they are not behind, but held back by it
    expect(rest.map((node) => after.get(node)?.sentRevision)).toEqual(
      rest.map((node) => before.get(node)?.sentRevision),
    );
    expect(rest.map((node) => after.get(node)?.behind)).toEqual(rest.map(() => false));
    expect(rest.map((node) => after.get(node)?.heldBack)).toEqual(rest.map(() => `rollout:${halted.id}`));
    expect(rest.map((node) => appliedVersion(bed, node, 'web'))).toEqual(rest.map(() => null));

    const shown = await bed.meshText('rollout', 'show', halted.id);
    expect(shown.code).toBe(ExitCode.rolloutHalted);
    expect(shown.output).toContain('halted: 1 failure, more than --max-failures 0');
    expect(shown.output).toMatch(/web-1 failed revision \d+ \(apply/);
    const listed = await expectOk(bed.mesh('rollout', 'list'), 'mesh rollout list');
    expect((listed.json as { rollouts: Array<{ id: string; state: string }> }).rollouts[0]).toMatchObject({
      id: halted.id,
      state: 'halted',
    });

    const good = await expectOk(
      bed.mesh('upgrade', 'web', '2.1', '--waves', '1,100%'),
      'mesh upgrade web 2.1 --waves 1,100%',
    );
    expect((good.json as RolloutRecord).state).toBe('done');
    await eventually('all six hosts to apply web 2.1', () =>
      hosts.every((node) => appliedVersion(bed, node, 'web') === '2.1') ? true : undefined,
    );
    expect(hosts.filter((node) => failed(bed, node).length > 0)).toEqual(['web-1']);
  }));
