import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { meshLimits } from '../lib/server/core/mesh/limits.ts';
import type { SealingKey } from '../lib/server/core/mesh/model.ts';
import { sealingKeyOf } from '../lib/server/core/sealing/sealed-secret.ts';
import { seedConsumers, seedingClient } from '../test/support/large-provider.ts';
import { addAndEnrol, type Bed, eventually, expectOk, inBed } from './support/bed.ts';

type PushOutcome = {
  pushed: { node: string; revision: number };
  flushed: Array<{ node: string; revision: number; round: number }>;
  behind: string[];
};

/** Waits for the node's apply hook to record `revision` and answers what it applied. */
async function appliedRevision(bed: Bed, node: string, revision: number) {
  const file = join(bed.recordDir(node), `applied-${revision}.json`);
  await eventually(
    `${node}'s host to apply revision ${revision}`,
    () => (existsSync(file) ? true : undefined),
    600_000,
  );
  return JSON.parse(readFileSync(file, 'utf8')) as {
    grants: Array<{ resource: string; consumer: { node: string } }>;
    provisions: Array<{ resource: string; provider: { node: string } }>;
  };
}

/**
 * A provider for a fleet (issue 22): a broker node with 9,999 consumers, their grants seeded
 * through the store (the provider's side: what its compose reads), is pushed; its declaration (about 1.7 MB, over one DynamoDB item) is kept in parts and
 * its real host fetches it whole with one ETag and applies it, minting every vhost. Then a new
 * consumer node is added and only that node is pushed, once: the broker is flushed in the same
 * push (docs/decisions/one-push-leaves-the-mesh-consistent.md) and its host applies 10,000
 * grants. A consumer past the limit is refused, naming it.
 */
/** The sealing key `mesh-host enrol` kept for the node, whose public half its enrolment recorded. */
function enrolledSealingKey(bed: Bed, node: string): SealingKey {
  const jwk = JSON.parse(readFileSync(join(bed.hostDir(node), 'sealing.jwk'), 'utf8')) as { x?: string };
  return sealingKeyOf(jwk) as SealingKey;
}

it(
  'a provider with 10,000 consumers is sent in parts, applied by its host, and flushed by one push of a new consumer',
  () =>
    inBed('large-provider', async (bed) => {
      // A store of its own: DynamoDB Local keeps every table in one database (-sharedDb), and
      // its pages of 10,000 grants would hold up the beds beside it past their 3 s request timeout.
      // Never stopped, so it can be in memory, where the seed's 20,000 writes go faster than on disk.
      await bed.startStore({ inMemory: true });
      await bed.startControlPlane({}, 'beds/support/patient-store.ts');
      await addAndEnrol(bed, 'broker');
      await expectOk(bed.mesh('assign', 'broker', 'rabbitmq', '--provides', 'amqp'), 'assign broker');
      const store = seedingClient(bed.dynamodbEndpoint);
      const seeded = meshLimits.consumersPerNode - 1;
      await seedConsumers(
        store,
        bed.tableName('inventory'),
        { node: 'broker', module: 'rabbitmq', kind: 'amqp' },
        seeded,
        { consumerSide: false, providerKey: enrolledSealingKey(bed, 'broker') },
      );
      store.destroy();
      bed.startHost('broker');

      const first = (await expectOk(bed.mesh('push', 'broker'), 'mesh push broker')).json as PushOutcome;
      const before = await appliedRevision(bed, 'broker', first.pushed.revision);
      expect(before.grants).toHaveLength(seeded);
      expect(readdirSync(join(bed.recordDir('broker'), 'vhosts'))).toHaveLength(seeded);

      await addAndEnrol(bed, 'app');
      await expectOk(bed.mesh('assign', 'app', 'web'), 'assign app');
      await expectOk(bed.mesh('consume', 'app/web', 'broker/rabbitmq'), 'consume');
      bed.startHost('app');
      const push = (await expectOk(bed.mesh('push', 'app'), 'mesh push app')).json as PushOutcome;
      expect(push.pushed.node).toBe('app');
      expect(push.behind).toEqual([]);
      const flushed = push.flushed.find((entry) => entry.node === 'broker');
      expect(flushed).toMatchObject({ revision: first.pushed.revision + 1, round: 1 });

      const after = await appliedRevision(bed, 'broker', flushed?.revision ?? 0);
      expect(after.grants).toHaveLength(meshLimits.consumersPerNode);
      expect(after.grants.filter((grant) => grant.consumer.node === 'app')).toEqual([
        expect.objectContaining({ resource: 'app_web' }),
      ]);
      expect(readFileSync(join(bed.recordDir('broker'), 'vhosts', 'app_web'), 'utf8')).toContain('for app');
      const app = await appliedRevision(bed, 'app', push.pushed.revision);
      expect(app.provisions).toEqual([
        expect.objectContaining({
          resource: 'app_web',
          provider: { node: 'broker', module: 'rabbitmq', kind: 'amqp' },
        }),
      ]);

      await expectOk(bed.mesh('node', 'add', 'one-more'), 'node add one-more');
      await expectOk(bed.mesh('assign', 'one-more', 'web'), 'assign one-more');
      const refused = await bed.mesh('consume', 'one-more/web', 'broker/rabbitmq');
      expect(refused.code).not.toBe(0);
      expect(refused.output).toContain('consumersPerNode');
    }),
  900_000,
);
