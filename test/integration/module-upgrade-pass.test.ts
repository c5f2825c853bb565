import { randomBytes } from 'node:crypto';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { localPartsFor } from '../../lib/local/parts.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import { moduleKey } from '../../lib/server/adapters/dynamodb/mesh-items.ts';
import { documentClient } from '../../lib/server/adapters/dynamodb/requests.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
import { provisionTestResources } from '../support/resources.ts';
import { partsWatchingTransactions } from '../support/watched-transactions.ts';

/**
 * An upgrade's pass over a module's carriers (lib/server/adapters/mesh/module-versions.ts): 8
 * transactions at a time, carriers already at the version skipped, and a pass that a newer
 * version overtook stopped. Transactions are counted on the SDK client (test/support).
 */
let config: MeshConfig;
let parts: Parts;

beforeAll(async () => {
  config = await provisionTestResources('upgrade-pass');
  parts = localPartsFor(config);
});

const unique = (name: string) => `${name}-${randomBytes(3).toString('hex')}`;

async function carriersOf(module: string, count: number): Promise<string[]> {
  const nodes = Array.from({ length: count }, (_, index) => `${module}-n${index}`);
  for (const node of nodes) {
    await parts.meshService.addNode(node, {}, localActor());
    await parts.meshService.assign(node, module, null, localActor());
  }
  await parts.pushFlow.push({ behind: true });
  return nodes;
}

const versionsOf = async (nodes: readonly string[], module: string) =>
  Promise.all(
    nodes.map(async (node) => {
      const snapshot = await parts.pushStore.readNode(node);
      return snapshot?.assignments.find((assignment) => assignment.module === module)?.version ?? null;
    }),
  );

describe('an upgrade’s pass over its carriers, on DynamoDB Local', () => {
  it('moves every carrier and marks it; a repeat, and a carrier assigned since, write nothing', async () => {
    const module = unique('base');
    const nodes = await carriersOf(module, 20);
    const first = partsWatchingTransactions(config);

    const { carriers } = await first.parts.moduleVersions.setModuleVersion(module, '2.0', localActor());
    const marked = await parts.pushStore.listMarked();
    await parts.meshService.addNode(`${module}-late`, {}, localActor());
    await parts.meshService.assign(`${module}-late`, module, null, localActor());
    const repeat = partsWatchingTransactions(config);
    const again = await repeat.parts.moduleVersions.setModuleVersion(module, '2.0', localActor());

    expect([...carriers].sort()).toEqual([...nodes].sort());
    // The version with its audit record, then one per carrier.
    expect(first.counted.transactions).toBe(21);
    expect(await versionsOf(nodes, module)).toEqual(nodes.map(() => '2.0'));
    expect(marked).toEqual(expect.arrayContaining(nodes));
    expect(again.carriers).toHaveLength(21);
    // The version's, refused: it is already set, so nothing is recorded or moved again.
    expect(repeat.counted.transactions).toBe(1);
    expect(await versionsOf([`${module}-late`], module)).toEqual(['2.0']);
  });

  it('stops a pass that a newer version overtook after the round it was in', async () => {
    const module = unique('cache');
    const nodes = await carriersOf(module, 20);
    const inventory = documentClient(makeDynamoDBClient(config));
    // A newer upgrade lands while the pass's first 8 are being written (the first transaction
    // is the version's own).
    const { counted, parts: overtaken } = partsWatchingTransactions(config, {
      before: async (count) => {
        if (count !== 2) return;
        await inventory.send(
          new UpdateCommand({
            TableName: config.inventoryTable,
            Key: moduleKey(module),
            UpdateExpression: 'SET version = :newer',
            ExpressionAttributeValues: { ':newer': '3.0' },
          }),
        );
      },
    });

    await overtaken.moduleVersions.setModuleVersion(module, '2.0', localActor());

    expect(counted.transactions).toBe(1 + 8);
    const versions = await versionsOf(nodes, module);
    expect(versions.filter((version) => version === '2.0')).toHaveLength(8);
    expect(versions.filter((version) => version === null)).toHaveLength(12);
  });

  it('stops at its deadline after a round and says more; the rest, as a continuation, goes on after the last carrier walked', async () => {
    const module = unique('deadline');
    const nodes = await carriersOf(module, 17);
    const past = Date.now() - 1_000;
    const passes: Array<{ more: boolean; transactions: number; moved: number; queried: number }> = [];
    let after: string | undefined;
    for (let pass = 0; pass < 5; pass += 1) {
      const watched = partsWatchingTransactions(config);
      const answer = await watched.parts.moduleVersions.setModuleVersion(module, '2.0', localActor(), {
        until: past,
        ...(pass > 0 ? { continues: true } : {}),
        ...(after !== undefined ? { after } : {}),
      });
      after = answer.next;
      const moved = (await versionsOf(nodes, module)).filter((version) => version === '2.0').length;
      const { transactions, itemsQueried } = watched.counted;
      passes.push({ more: answer.more, transactions, moved, queried: itemsQueried });
      if (!answer.more) break;
    }
    // each pass moves one round of 8 at least; the first also sets the version, the others do
    // not; each reads only the carriers from where the one before stopped, never the whole list again
    expect(passes).toEqual([
      { more: true, transactions: 1 + 8, moved: 8, queried: 17 },
      { more: true, transactions: 8, moved: 16, queried: 9 },
      { more: false, transactions: 1, moved: 17, queried: 1 },
    ]);
  });

  it('goes on from the start when a continuation names no carrier, passing those at the version', async () => {
    const module = unique('restart');
    const nodes = await carriersOf(module, 17);
    const past = Date.now() - 1_000;
    const first = partsWatchingTransactions(config);
    expect(
      (await first.parts.moduleVersions.setModuleVersion(module, '2.0', localActor(), { until: past })).more,
    ).toBe(true);
    const rest = partsWatchingTransactions(config);
    const again = await rest.parts.moduleVersions.setModuleVersion(module, '2.0', localActor(), {
      until: past,
      continues: true,
    });
    // the 8 moved are passed over, and the next round of 8 is moved before the deadline counts
    expect(again).toMatchObject({ more: true });
    expect(rest.counted.transactions).toBe(8);
    expect((await versionsOf(nodes, module)).filter((version) => version === '2.0')).toHaveLength(16);
  });

  it('stops at a throttle after some carriers moved and says more; a throttle before any is the store away', async () => {
    const module = unique('throttle');
    const nodes = await carriersOf(module, 10);
    const throttled = () =>
      Object.assign(new Error('Rate of requests exceeds the allowed throughput'), {
        name: 'ThrottlingException',
        $retryable: { throttling: true },
      });
    const first = partsWatchingTransactions(config, {
      before: async (count) => {
        // the version's own, then the first round's third carrier
        if (count === 4) throw throttled();
      },
    });
    const { more } = await first.parts.moduleVersions.setModuleVersion(module, '2.0', localActor());
    expect(more).toBe(true);
    expect((await versionsOf(nodes, module)).filter((version) => version === '2.0')).toHaveLength(7);

    const away = partsWatchingTransactions(config, {
      before: async () => {
        throw throttled();
      },
    });
    await expect(
      away.parts.moduleVersions.setModuleVersion(module, '2.0', localActor(), { continues: true }),
    ).rejects.toThrow(/inventory table/);
    const rest = await parts.moduleVersions.setModuleVersion(module, '2.0', localActor(), {
      continues: true,
    });
    expect(rest.more).toBe(false);
    expect(await versionsOf(nodes, module)).toEqual(nodes.map(() => '2.0'));
  });

  it('leaves a continuation whose module a newer upgrade set to another version', async () => {
    const module = unique('overtaken');
    const nodes = await carriersOf(module, 3);
    await parts.moduleVersions.setModuleVersion(module, '3.0', localActor());
    const rest = await parts.moduleVersions.setModuleVersion(module, '2.0', localActor(), {
      continues: true,
    });
    expect(rest).toMatchObject({ overtaken: true, more: false });
    expect(await versionsOf(nodes, module)).toEqual(nodes.map(() => '3.0'));
  });
});
