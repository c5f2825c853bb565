import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { addAndEnrol, eventually, expectOk, inBed, status } from './support/bed.ts';

const lines = (path: string) =>
  existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean) : [];

/**
 * A machine loses power in the middle of applying. Its host had already reported "applying";
 * when it comes back it must apply the same revision again (it was never applied) and its
 * "applied" must win over the "applying" sent before the crash, so the mesh does not show the
 * node stuck mid-apply forever.
 */
it('a host killed mid-apply applies the revision again on restart and is seen as applied', () =>
  inBed('host-restart-mid-apply', async (bed) => {
    await bed.startControlPlane();
    await addAndEnrol(bed, 'edge');
    await expectOk(bed.mesh('assign', 'edge', 'proxy'), 'assign edge');
    const started = join(bed.recordDir('edge'), 'started.log');
    const first = bed.startHost('edge', { applyDelayMs: 4_000, label: 'host edge (before the crash)' });

    const push = await expectOk(bed.mesh('push', 'edge'), 'mesh push edge');
    const revision = (push.json as { pushed: { revision: number } }).pushed.revision;
    await eventually('the slow apply to start', () => (lines(started).length === 1 ? true : undefined));
    await eventually('the control plane to hear "applying"', async () =>
      (await status(bed)).get('edge')?.reportState === 'applying' ? true : undefined,
    );
    first.child.kill('SIGKILL');
    await first.exited();

    bed.startHost('edge', { label: 'host edge (after the restart)' });

    await eventually('the restarted host to apply the revision again', () =>
      lines(started).length === 2 ? true : undefined,
    );
    const edge = await eventually('the control plane to see edge applied', async () => {
      const entry = (await status(bed)).get('edge');
      return entry?.reportState === 'applied' && entry.appliedRevision === revision ? entry : undefined;
    });
    expect(edge.behind).toBe(false);
    expect(lines(started)).toEqual([String(revision), String(revision)]);
  }));
