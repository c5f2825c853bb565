import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { consumerLines } from '../lib/server/core/control/log-lines.ts';
import { addAndEnrol, appliedVersion, type Bed, eventually, expectOk, inBed, status } from './support/bed.ts';

const carriers = ['web-1', 'web-2'];
const carriersAt = (bed: Bed, version: string | null) => () =>
  carriers.every((node) => appliedVersion(bed, node, 'app') === version) ? true : undefined;

/**
 * An upgrade whose push fails (switched on by the bed's own entry point,
 * beds/support/switchable-upgrade-push.ts, as a throttled Step Functions start would): the
 * version is set and the carriers are left behind, `mesh status` says so, the hosts keep what
 * they run, and the next `mesh push --behind` brings them to the new version.
 */
it('an upgrade whose push failed leaves its carriers behind, and push --behind finishes it', () =>
  inBed('upgrade-push-failed', async (bed) => {
    const failUpgradePush = join(bed.dir, 'fail-upgrade-push');
    await bed.startControlPlane(
      { BED_FAIL_UPGRADE_PUSH: failUpgradePush },
      'beds/support/switchable-upgrade-push.ts',
    );
    for (const node of carriers) {
      await addAndEnrol(bed, node);
      await expectOk(bed.mesh('assign', node, 'app'), `assign ${node} app`);
      bed.startHost(node);
    }
    await expectOk(bed.mesh('upgrade', 'app', '2.0'), 'mesh upgrade app 2.0');
    await eventually('both carriers to apply app 2.0', carriersAt(bed, '2.0'));

    writeFileSync(failUpgradePush, 'on\n');
    await expectOk(bed.mesh('upgrade', 'app', '3.0'), 'mesh upgrade app 3.0');
    await bed.process('control-plane').waitForCode(consumerLines.upgradePushFailed, {
      where: (failed) => failed.module === 'app',
      timeoutMs: 30_000,
    });
    const behind = await status(bed);
    expect(carriers.map((node) => behind.get(node)?.behind)).toEqual([true, true]);
    expect(carriers.map((node) => appliedVersion(bed, node, 'app'))).toEqual(['2.0', '2.0']);

    rmSync(failUpgradePush);
    const push = await expectOk(bed.mesh('push', '--behind'), 'mesh push --behind');
    const flushed = (push.json as { flushed: Array<{ node: string }> }).flushed.map((entry) => entry.node);
    expect(flushed.sort()).toEqual(carriers);
    await eventually('both carriers to apply app 3.0 after push --behind', carriersAt(bed, '3.0'));
    const after = await status(bed);
    expect(carriers.map((node) => after.get(node)?.behind)).toEqual([false, false]);
  }));
