import { expect, it } from 'vitest';
import {
  addAndEnrol,
  appliedAsSent,
  appliedVersion,
  type Bed,
  eventually,
  expectOk,
  inBed,
} from './support/bed.ts';

const carriers = ['web-1', 'web-2'];
const carriersAt = (bed: Bed, version: string | null) => () =>
  carriers.every((node) => appliedVersion(bed, node, 'nginx') === version) ? true : undefined;

/**
 * `mesh catch-up` until both carriers apply `version`: a build and a catch-up are different
 * subjects, so a catch-up taken before the build is recorded announces the build before it.
 */
async function caughtUp(bed: Bed, version: string, what: string) {
  let askAt = 0;
  await eventually(what, async () => {
    if (carriersAt(bed, version)()) return true;
    if (Date.now() >= askAt) {
      await expectOk(bed.mesh('catch-up'), 'mesh catch-up');
      askAt = Date.now() + 5_000;
    }
    return undefined;
  });
}

/**
 * The upgrade path end to end, through the real control queue, store and push flow, with real
 * hosts: a build is recorded, catch-up announces it as an upgrade, the consumer sets the
 * module's version and pushes every carrier with no push by hand; then an operator's upgrade
 * does the same. Both hosts apply each version and report it applied. Then a bad build is
 * announced and retracted, and the next catch-up takes both hosts back to the build before it.
 */
it('a build announced by catch-up, an upgrade, and a retracted build reach every node that carries the module', () =>
  inBed('module-upgrade', async (bed) => {
    await bed.startControlPlane();
    for (const node of carriers) {
      await addAndEnrol(bed, node);
      await expectOk(bed.mesh('assign', node, 'nginx'), `assign ${node}`);
      bed.startHost(node);
    }
    await expectOk(bed.mesh('push', '--behind'), 'mesh push --behind');
    await eventually(
      'both hosts to apply their first declaration, with no version yet',
      carriersAt(bed, null),
    );

    await expectOk(
      bed.mesh('build', 'nginx', '1.26.2', '--id', 'nginx-1.26.2-ci'),
      'mesh build nginx 1.26.2',
    );
    await caughtUp(bed, '1.26.2', 'both hosts to apply nginx 1.26.2, announced by catch-up');

    const upgrade = await expectOk(bed.mesh('upgrade', 'nginx', '1.27.0'), 'mesh upgrade nginx 1.27.0');
    expect(upgrade.json).toMatchObject({ upgrade: { module: 'nginx', version: '1.27.0' } });
    await eventually('both hosts to apply nginx 1.27.0', carriersAt(bed, '1.27.0'));
    const nodes = await appliedAsSent(bed, carriers);
    expect(nodes.map((entry) => entry?.behind)).toEqual([false, false]);

    await expectOk(
      bed.mesh('build', 'nginx', '1.27.1', '--id', 'nginx-1.27.1-ci'),
      'mesh build nginx 1.27.1',
    );
    await caughtUp(bed, '1.27.1', 'both hosts to apply nginx 1.27.1, announced by catch-up');
    const retracted = await expectOk(
      bed.mesh('build', 'retract', 'nginx', '1.27.1'),
      'mesh build retract nginx 1.27.1',
    );
    expect(retracted.json).toMatchObject({
      retracted: { builds: ['nginx-1.27.1-ci'] },
      latest: { id: 'nginx-1.26.2-ci', version: '1.26.2' },
    });
    await expectOk(bed.mesh('catch-up'), 'mesh catch-up');
    await eventually('both hosts to go back to nginx 1.26.2, the build before the retracted one', () =>
      carriersAt(bed, '1.26.2')(),
    );
  }));
