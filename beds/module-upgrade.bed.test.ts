import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { addAndEnrol, appliedAsSent, type Bed, eventually, expectOk, inBed } from './support/bed.ts';

/** The version of `module` in the last declaration a host applied, if any. */
function appliedVersion(bed: Bed, node: string, module: string): string | null | undefined {
  const dir = bed.recordDir(node);
  const revisions = readdirSync(dir)
    .map((file) => /^applied-(\d+)\.json$/.exec(file)?.[1])
    .filter((revision): revision is string => revision !== undefined)
    .map(Number);
  if (revisions.length === 0) return undefined;
  const latest = join(dir, `applied-${Math.max(...revisions)}.json`);
  if (!existsSync(latest)) return undefined;
  const declaration = JSON.parse(readFileSync(latest, 'utf8')) as {
    modules: Array<{ name: string; version: string | null }>;
  };
  return declaration.modules.find((entry) => entry.name === module)?.version;
}

/**
 * An operator upgrades a module two nodes carry. The upgrade goes through the control queue;
 * its consumer sets the version and pushes every node behind, with no push by hand: both
 * hosts apply a declaration with the new version and report it applied.
 */
it('an upgrade of a module reaches every node that carries it, and their hosts apply it', () =>
  inBed('module-upgrade', async (bed) => {
    await bed.startControlPlane();
    for (const node of ['web-1', 'web-2']) {
      await addAndEnrol(bed, node);
      await expectOk(bed.mesh('assign', node, 'nginx'), `assign ${node}`);
      bed.startHost(node);
    }
    await expectOk(bed.mesh('push', '--behind'), 'mesh push --behind');
    await eventually('both hosts to apply their first declaration', () =>
      ['web-1', 'web-2'].every((node) => appliedVersion(bed, node, 'nginx') !== undefined) ? true : undefined,
    );

    const upgrade = await expectOk(bed.mesh('upgrade', 'nginx', '1.27.0'), 'mesh upgrade nginx 1.27.0');
    expect(upgrade.json).toMatchObject({ upgrade: { module: 'nginx', version: '1.27.0' } });

    await eventually('both hosts to apply nginx 1.27.0', () =>
      ['web-1', 'web-2'].every((node) => appliedVersion(bed, node, 'nginx') === '1.27.0') ? true : undefined,
    );
    const nodes = await appliedAsSent(bed, ['web-1', 'web-2']);
    expect(nodes.map((entry) => entry?.behind)).toEqual([false, false]);
  }));
