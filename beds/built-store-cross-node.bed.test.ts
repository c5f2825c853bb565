import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { instance } from '@viz-js/viz';
import { expect, it } from 'vitest';
import { addAndEnrol, appliedAsSent, eventually, expectOk, inBed, status } from './support/bed.ts';

/**
 * One push leaves the mesh consistent (docs/decisions/one-push-leaves-the-mesh-consistent.md).
 * A broker node provides amqp and has applied everything it was sent, so it is not behind. Then
 * the app node's web module starts consuming it and only the app node is pushed, once: the
 * provision minted while composing the app makes the broker behind inside that push, which must
 * flush it and have it mint the app's vhost, with no second push.
 */
it('a push of only the consumer’s node mints the provision on the provider’s node', () =>
  inBed('built-store-cross-node', async (bed) => {
    await bed.startControlPlane();
    await addAndEnrol(bed, 'broker');
    await addAndEnrol(bed, 'app');
    await expectOk(bed.mesh('assign', 'broker', 'rabbitmq', '--provides', 'amqp'), 'assign broker');
    await expectOk(bed.mesh('assign', 'app', 'web'), 'assign app');
    bed.startHost('broker');
    bed.startHost('app');
    await expectOk(bed.mesh('push', '--behind'), 'mesh push --behind');
    await eventually('the broker to apply what it was sent, and be behind no more', async () => {
      const broker = (await status(bed)).get('broker');
      return broker && !broker.behind && broker.appliedRevision === broker.sentRevision ? true : undefined;
    });

    await expectOk(bed.mesh('consume', 'app/web', 'broker/rabbitmq'), 'consume');
    const beforePush = await status(bed);
    expect([beforePush.get('broker')?.behind, beforePush.get('app')?.behind]).toEqual([false, true]);
    const push = await expectOk(bed.mesh('push', 'app'), 'mesh push app');

    const outcome = push.json as {
      pushed: { node: string; revision: number };
      flushed: Array<{ node: string; revision: number; round: number }>;
      behind: string[];
    };
    expect(outcome.pushed.node).toBe('app');
    expect(outcome.flushed.map((entry) => entry.node)).toContain('broker');
    expect(outcome.behind).toEqual([]);

    const vhost = join(bed.recordDir('broker'), 'vhosts', 'app_web');
    await eventually('the broker’s hook to mint the app’s vhost', () =>
      existsSync(vhost) ? true : undefined,
    );
    expect(readFileSync(vhost, 'utf8')).toContain('for app');

    const applied = await appliedAsSent(bed, ['broker', 'app']);
    expect(applied.map((entry) => entry?.behind)).toEqual([false, false]);
    const app = JSON.parse(
      readFileSync(join(bed.recordDir('app'), `applied-${outcome.pushed.revision}.json`), 'utf8'),
    );
    expect(app.provisions).toEqual([
      expect.objectContaining({
        module: 'web',
        resource: 'app_web',
        provider: expect.objectContaining({ node: 'broker' }),
      }),
    ]);

    // What `mesh graph --format dot` prints for this mesh is a graph Graphviz lays out.
    const dot = (await expectOk(bed.meshText('graph', '--format', 'dot'), 'mesh graph --format dot')).output;
    const laidOut = (await instance()).render(dot.slice(0, dot.lastIndexOf('}') + 1), { format: 'json' });
    const graph = JSON.parse(laidOut.output ?? 'null') as {
      objects: Array<{ name: string }>;
      edges: Array<{ label: string }>;
    };
    expect(graph.objects.map((object) => object.name)).toEqual(['app', 'broker']);
    expect(graph.edges.map((edge) => edge.label)).toEqual(['amqp: web → rabbitmq']);
  }));
