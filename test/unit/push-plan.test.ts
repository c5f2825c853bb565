import { describe, expect, it } from 'vitest';
import { LocalPushFlow } from '../../lib/local/local-push-flow.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { MeshService } from '../../lib/server/core/mesh/service.ts';
import { planPush } from '../../lib/server/core/push/plan.ts';
import type { Delivery, DeliveryReader, PushRequest } from '../../lib/server/core/push/ports.ts';
import { Pusher } from '../../lib/server/core/push/pusher.ts';
import { pushTaskFunctions } from '../../lib/server/core/push/steps.ts';
import { runPushDefinition } from '../../lib/server/flows/push-definition.ts';
import { MemoryMeshStore } from '../support/memory-mesh-store.ts';

/** What each node was last sent, from the memory store's own record of sends. */
const deliveriesOf = (store: MemoryMeshStore): DeliveryReader => ({
  readDelivery: async (node) => {
    const canonical = store.deliveries.get(node);
    return canonical ? ({ node, declaration: JSON.parse(canonical) } as Delivery) : undefined;
  },
});

/** A chain: app consumes broker, broker consumes db; everything sent, then relations added. */
async function chain() {
  const store = new MemoryMeshStore();
  const service = new MeshService({ store, removals: store });
  for (const node of ['app', 'broker', 'db']) await service.addNode(node, {}, localActor());
  await service.assign('db', 'pg', 'sql', localActor());
  await service.assign('broker', 'mq', 'amqp', localActor());
  await service.assign('app', 'web', null, localActor());
  await runPushDefinition(pushTaskFunctions(new Pusher({ store })), { behind: true });
  await service.consume({ node: 'app', module: 'web' }, { node: 'broker', module: 'mq' }, localActor());
  await service.consume({ node: 'broker', module: 'mq' }, { node: 'db', module: 'pg' }, localActor());
  await store.setModuleVersion('web', '2.0');
  return { store, service };
}

describe('runPushDefinition, the push’s ASL run in-process for a plan', () => {
  it('answers what aws-local-stepfunctions answers on the same ASL, the round bound included', async () => {
    for (const request of [
      { node: 'app' },
      { node: 'app', maxRounds: 1 },
      { behind: true, full: true },
    ] as PushRequest[]) {
      const inProcess = await chain();
      const throughAsl = await chain();

      // Sealed in the same turn, so the two runs interleave their sends alike: sealing on
      // WebCrypto's threads would let a round's sends finish in either order.
      const mint = { seal: async () => 'sealed' };
      const steps = await runPushDefinition(
        pushTaskFunctions(new Pusher({ store: inProcess.store, mint })),
        request,
      );
      const asl = await new LocalPushFlow({
        tasks: pushTaskFunctions(new Pusher({ store: throughAsl.store, mint })),
      }).push(request);

      expect(steps).toEqual(asl);
    }
  });
});

describe('push --plan', () => {
  it('answers what the push then does, and writes nothing', async () => {
    const { store } = await chain();
    const before = JSON.stringify([...store.nodes], (_, value) =>
      value instanceof Map ? [...value] : value,
    );

    const plan = await planPush(
      { node: 'app' },
      { store, deliveries: deliveriesOf(store), runSteps: runPushDefinition },
    );
    const after = JSON.stringify([...store.nodes], (_, value) => (value instanceof Map ? [...value] : value));
    const outcome = await runPushDefinition(pushTaskFunctions(new Pusher({ store })), { node: 'app' });

    expect(after).toBe(before);
    expect({
      pushed: plan.pushed && { node: plan.pushed.node, revision: plan.pushed.revision },
      flushed: plan.flushed.map(({ node, revision, round }) => ({ node, revision, round })),
      rounds: plan.rounds,
      behind: plan.behind,
    }).toEqual(outcome);
  });

  it('says what changes in each declaration, a secret only as new or changed', async () => {
    const { store } = await chain();

    const plan = await planPush(
      { node: 'app' },
      { store, deliveries: deliveriesOf(store), runSteps: runPushDefinition },
    );

    expect(plan.pushed?.changes).toEqual([
      { section: 'module', change: 'changed', item: 'web', detail: 'version - -> 2.0' },
      {
        section: 'provision',
        change: 'added',
        item: 'web -> broker/mq (amqp)',
        detail: 'resource app_web, user app_web, secret new',
      },
    ]);
    const broker = plan.flushed.find((send) => send.node === 'broker');
    expect(broker?.changes).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ section: 'grant', change: 'added', item: 'mq <- app/web (amqp)' }),
        expect.objectContaining({ section: 'provision', change: 'added', item: 'mq -> db/pg (sql)' }),
      ]),
    );
    expect(JSON.stringify(plan)).not.toContain('minted-by-the-push');
  });
});
