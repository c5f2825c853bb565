import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { localPartsFor } from '../../lib/local/parts.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import type { Declaration } from '../../lib/server/core/mesh/declaration.ts';
import { HasDependentsError } from '../../lib/server/core/mesh/errors.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
import { provisionTestResources } from '../support/resources.ts';
import { tableContents } from '../support/table-contents.ts';
import { partsWatchingTransactions } from '../support/watched-transactions.ts';

/**
 * Removals larger than one DynamoDB transaction (100 items, which DynamoDB Local enforces as AWS
 * does) are taken away in steps (lib/server/adapters/mesh/mesh-removals.ts): relations, then
 * modules, the node last, each step decided from a fresh read.
 */
let config: MeshConfig;
let parts: Parts;

beforeAll(async () => {
  config = await provisionTestResources('removal-steps');
  parts = localPartsFor(config, { flowRetryIntervalMs: 0 });
});

const unique = (name: string) => `${name}-${randomBytes(3).toString('hex')}`;
const sent = async (node: string) => (await parts.deliveries.readDelivery(node))?.declaration as Declaration;

/** A provider node `hub` whose module `db` is consumed by `perNode` modules on each of `nodes` nodes, all sent. */
async function hubWithConsumers(nodes: number, perNode: number) {
  const hub = unique('hub');
  await parts.meshService.addNode(hub, {}, localActor());
  await parts.meshService.assign(hub, 'db', 'postgres', localActor());
  const consumers = Array.from({ length: nodes }, (_, index) => `${hub}-c${index}`);
  for (const node of consumers) {
    await parts.meshService.addNode(node, {}, localActor());
    for (let index = 0; index < perNode; index += 1) {
      await parts.meshService.assign(node, `app${index}`, null, localActor());
      await parts.meshService.consume(
        { node, module: `app${index}` },
        { node: hub, module: 'db' },
        localActor(),
      );
    }
  }
  await parts.pushFlow.push({ behind: true });
  return { hub, consumers };
}

describe('a removal larger than one transaction, on DynamoDB Local', () => {
  it('removes a node with 55 modules in steps, and nothing of it is left', async () => {
    const node = unique('big');
    await parts.meshService.addNode(node, {}, localActor());
    for (let index = 0; index < 55; index += 1)
      await parts.meshService.assign(node, `m${index}`, null, localActor());
    await parts.pushFlow.push({ node });
    const { counted, parts: removing } = partsWatchingTransactions(config);

    const removed = await removing.meshService.removeNode(node, false, localActor());

    expect(removed.assignments).toHaveLength(55);
    expect(removed.node).toBe(node);
    expect(counted.transactions).toBeGreaterThan(1);
    expect(await parts.pushStore.readNode(node)).toBeUndefined();
    // the push's record, kept for its 90 days, may name it; nothing of the mesh may
    const left = (Object.values(await tableContents(config)).flat() as Array<Record<string, unknown>>).filter(
      (item) => item.pk === `node#${node}` || item.sk === `carrier#${node}` || item.sk === node,
    );
    expect(left).toEqual([]);
  });

  it('refuses a provider with 120 consumers without --cascade, changing nothing, and with it withdraws them all in steps', async () => {
    const { hub, consumers } = await hubWithConsumers(6, 20);
    const before = await tableContents(config);

    const refused = await parts.meshService
      .removeNode(hub, false, localActor())
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(HasDependentsError);
    expect(await tableContents(config)).toEqual(before);

    const { counted, parts: removing } = partsWatchingTransactions(config);
    const removed = await removing.meshService.removeNode(hub, true, localActor());
    const outcome = await parts.pushFlow.push({ behind: true });

    expect(removed.relations).toHaveLength(120);
    expect(removed.marked).toEqual([...consumers].sort());
    expect(counted.transactions).toBeGreaterThan(1);
    expect(outcome.flushed.map((entry) => entry.node).sort()).toEqual(expect.arrayContaining(consumers));
    for (const node of consumers) {
      expect((await sent(node)).provisions).toEqual([]);
      expect((await parts.pushStore.readNode(node))?.relations).toEqual([]);
    }
    expect(await parts.pushStore.readNode(hub)).toBeUndefined();
  });

  it('reads again before each step: a consumer added between steps is withdrawn with the rest', async () => {
    const { hub, consumers } = await hubWithConsumers(3, 20);
    const late = `${hub}-late`;
    await parts.meshService.addNode(late, {}, localActor());
    await parts.meshService.assign(late, 'web', null, localActor());
    const { parts: removing } = partsWatchingTransactions(config, {
      after: async (count) => {
        if (count === 1)
          await parts.meshService.consume(
            { node: late, module: 'web' },
            { node: hub, module: 'db' },
            localActor(),
          );
      },
    });

    const removed = await removing.meshService.removeNode(hub, true, localActor());

    expect(removed.marked).toEqual([...consumers, late].sort());
    expect((await parts.pushStore.readNode(late))?.relations).toEqual([]);
    expect(await parts.pushStore.readNode(hub)).toBeUndefined();
  });
});
