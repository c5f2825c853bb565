import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { addAndEnrol, type Bed, eventually, expectOk, inBed, status } from './support/bed.ts';

/** The version of `module` in the last declaration the node's apply hook applied, if any. */
function appliedVersion(bed: Bed, node: string, module: string): string | null | undefined {
  const applied = readdirSync(bed.recordDir(node))
    .map((file) => /^applied-(\d+)\.json$/.exec(file)?.[1])
    .filter((revision): revision is string => revision !== undefined)
    .map(Number)
    .sort((a, b) => a - b)
    .at(-1);
  if (applied === undefined) return undefined;
  const declaration = JSON.parse(
    readFileSync(join(bed.recordDir(node), `applied-${applied}.json`), 'utf8'),
  ) as {
    modules: Array<{ name: string; version: string | null }>;
  };
  return declaration.modules.find((entry) => entry.name === module)?.version;
}

/**
 * The upgrade path end to end, through the real control queue, store and push flow, with real
 * hosts: a build is recorded, catch-up announces it as an upgrade, the consumer sets the
 * module's version and pushes, and both carriers apply it. Then an upgrade whose push fails
 * (switched on by the bed) leaves the carriers behind, `mesh status` says so, and the next
 * `mesh push --behind` brings them to the new version.
 */
it('build, catch-up and upgrade reach the hosts; an upgrade whose push failed is finished by push --behind', () =>
  inBed('build-catch-up-upgrade', async (bed) => {
    const failUpgradePush = join(bed.dir, 'fail-upgrade-push');
    await bed.startControlPlane(
      { BED_FAIL_UPGRADE_PUSH: failUpgradePush },
      'beds/support/switchable-upgrade-push.ts',
    );
    for (const node of ['web-1', 'web-2']) {
      await addAndEnrol(bed, node);
      await expectOk(bed.mesh('assign', node, 'app'), `assign ${node} app`);
      bed.startHost(node);
    }
    await expectOk(bed.mesh('push', '--behind'), 'mesh push --behind');
    const carriersAt = (version: string) => async () =>
      ['web-1', 'web-2'].every((node) => appliedVersion(bed, node, 'app') === version) ? true : undefined;
    await eventually('both carriers to apply the module with no version yet', async () =>
      ['web-1', 'web-2'].every((node) => appliedVersion(bed, node, 'app') === null) ? true : undefined,
    );

    await expectOk(bed.mesh('build', 'app', '2.0', '--id', 'app-2.0-ci'), 'mesh build app 2.0');
    await expectOk(bed.mesh('catch-up'), 'mesh catch-up');
    await eventually('both carriers to apply app 2.0, announced by catch-up', carriersAt('2.0'));

    writeFileSync(failUpgradePush, 'on\n');
    await expectOk(bed.mesh('upgrade', 'app', '3.0'), 'mesh upgrade app 3.0');
    await bed.process('control-plane').waitFor(/push after upgrading app failed/, 30_000);
    const behind = await status(bed);
    expect(['web-1', 'web-2'].map((node) => behind.get(node)?.behind)).toEqual([true, true]);
    expect(['web-1', 'web-2'].map((node) => appliedVersion(bed, node, 'app'))).toEqual(['2.0', '2.0']);

    rmSync(failUpgradePush);
    const push = await expectOk(bed.mesh('push', '--behind'), 'mesh push --behind');
    const flushed = (push.json as { flushed: Array<{ node: string }> }).flushed.map((entry) => entry.node);
    expect(flushed.sort()).toEqual(['web-1', 'web-2']);
    await eventually('both carriers to apply app 3.0 after push --behind', carriersAt('3.0'));
    const after = await status(bed);
    expect(['web-1', 'web-2'].map((node) => after.get(node)?.behind)).toEqual([false, false]);
  }));
