import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { ExitCode } from '../lib/clients/common/exit-codes.ts';
import { agentLines } from '../lib/clients/host/log-lines.ts';
import { addAndEnrol, appliedAsSent, expectOk, inBed, status } from './support/bed.ts';

/**
 * A provider's node removed with --cascade takes the relations of every consumer with
 * it and marks their nodes; one push flushes them without the provision, and the removed node's
 * host, its key refused, stops with the decommissioned exit code instead of retrying forever.
 */
it('removing a provider’s node with --cascade flushes its consumers and stops its host', () =>
  inBed('node-removed-cascade', async (bed) => {
    await bed.startControlPlane();
    for (const node of ['db', 'app', 'worker']) await addAndEnrol(bed, node);
    await expectOk(bed.mesh('assign', 'db', 'pg', '--provides', 'sql'), 'assign db');
    await expectOk(bed.mesh('assign', 'app', 'web'), 'assign app');
    await expectOk(bed.mesh('assign', 'worker', 'jobs'), 'assign worker');
    await expectOk(bed.mesh('consume', 'app/web', 'db/pg'), 'app consumes db');
    await expectOk(bed.mesh('consume', 'worker/jobs', 'db/pg'), 'worker consumes db');
    const db = bed.startHost('db', { interval: 1 });
    bed.startHost('app');
    bed.startHost('worker');
    await expectOk(bed.mesh('push', '--behind'), 'mesh push --behind');
    await appliedAsSent(bed, ['db', 'app', 'worker']);

    const refused = await bed.mesh('node', 'remove', 'db');
    expect([refused.code, (refused.json as { error: { code: string } }).error.code]).toEqual([
      ExitCode.refused,
      'has_dependents',
    ]);
    const removed = await expectOk(
      bed.mesh('node', 'remove', 'db', '--cascade'),
      'mesh node remove --cascade',
    );
    expect(removed.json).toMatchObject({ removed: { node: 'db' }, behind: ['app', 'worker'] });

    const push = await expectOk(bed.mesh('push', '--behind'), 'mesh push --behind');
    const outcome = push.json as { flushed: Array<{ node: string }>; behind: string[] };
    expect([outcome.flushed.map((f) => f.node).sort(), outcome.behind]).toEqual([['app', 'worker'], []]);
    const applied = await appliedAsSent(bed, ['app', 'worker']);
    for (const [index, node] of ['app', 'worker'].entries()) {
      const revision = applied[index]?.appliedRevision;
      const declaration = JSON.parse(
        readFileSync(join(bed.recordDir(node), `applied-${revision}.json`), 'utf8'),
      ) as { provisions: unknown[] };
      expect({ node, provisions: declaration.provisions }).toEqual({ node, provisions: [] });
    }
    expect([...(await status(bed)).keys()].sort()).toEqual(['app', 'worker']);

    const ended = await Promise.race([db.exited(), sleep(60_000).then(() => 'still running')]);
    expect(ended).toMatchObject({ code: ExitCode.decommissioned });
    expect(db.heard().map((said) => said.code)).toContain(agentLines.decommissioned.code);
  }));
