import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { addAndEnrol, appliedAsSent, eventually, expectOk, inBed, status } from './support/bed.ts';

/**
 * One push leaves the mesh consistent (docs/decisions/), for a withdrawn relation: it takes the
 * provision from the consumer and the grant from the provider in one transaction, and marks
 * both; pushing only the consumer's node flushes the provider, whose hook drops the vhost it
 * minted, in that same push.
 */
it('withdrawing a relation and pushing only the consumer drops the provider’s minted resource', () =>
  inBed('relation-removed', async (bed) => {
    await bed.startControlPlane();
    await addAndEnrol(bed, 'broker');
    await addAndEnrol(bed, 'app');
    await expectOk(bed.mesh('assign', 'broker', 'rabbitmq', '--provides', 'amqp'), 'assign broker');
    await expectOk(bed.mesh('assign', 'app', 'web'), 'assign app');
    await expectOk(bed.mesh('consume', 'app/web', 'broker/rabbitmq'), 'consume');
    bed.startHost('broker');
    bed.startHost('app');
    await expectOk(bed.mesh('push', 'app'), 'mesh push app');
    const vhost = join(bed.recordDir('broker'), 'vhosts', 'app_web');
    await eventually('the broker’s hook to mint the app’s vhost', () =>
      existsSync(vhost) ? true : undefined,
    );
    await appliedAsSent(bed, ['broker', 'app']);

    const withdrawn = await expectOk(bed.mesh('unconsume', 'app/web', 'broker/rabbitmq'), 'mesh unconsume');
    expect(withdrawn.json).toMatchObject({
      removed: { relations: ['app/web -> broker/rabbitmq'] },
      behind: ['app', 'broker'],
    });
    const marked = await status(bed);
    expect([marked.get('app')?.behind, marked.get('broker')?.behind]).toEqual([true, true]);

    const push = await expectOk(bed.mesh('push', 'app'), 'mesh push app');
    const outcome = push.json as {
      pushed: { node: string; revision: number };
      flushed: Array<{ node: string; revision: number }>;
      behind: string[];
    };
    expect([outcome.pushed.node, outcome.flushed.map((f) => f.node), outcome.behind]).toEqual([
      'app',
      ['broker'],
      [],
    ]);
    await eventually('the broker’s hook to drop the app’s vhost', () =>
      existsSync(vhost) ? undefined : true,
    );
    const [broker, app] = await appliedAsSent(bed, ['broker', 'app']);
    const appliedBy = (node: string, revision: number | null | undefined) =>
      JSON.parse(readFileSync(join(bed.recordDir(node), `applied-${revision}.json`), 'utf8')) as {
        grants: unknown[];
        provisions: unknown[];
      };
    expect(appliedBy('broker', broker?.appliedRevision).grants).toEqual([]);
    expect(appliedBy('app', app?.appliedRevision).provisions).toEqual([]);
  }));
