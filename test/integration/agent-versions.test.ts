import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { localPartsFor } from '../../lib/local/parts.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import { nodeItemKey } from '../../lib/server/adapters/dynamodb/keys.ts';
import { documentClient, getItems } from '../../lib/server/adapters/dynamodb/requests.ts';
import { DynamoAgentVersions } from '../../lib/server/adapters/mesh/agent-versions.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import { RecordingLog } from '../support/control-fakes.ts';
import { provisionTestResources } from '../support/resources.ts';

/**
 * The agent versions on DynamoDB Local (lib/server/adapters/mesh/agent-versions.ts): a wave's
 * nodes set in transactions of many nodes; a node changed between its read and its write is
 * left as it is, and only it: its transaction is written again a node at a time.
 */
let config: MeshConfig;
let parts: ReturnType<typeof localPartsFor>;
const nodes = Array.from({ length: 30 }, (_, i) => `av-${String(i).padStart(2, '0')}`);
const removed = 'av-07';
const rollout = '20261206T070000000Z-a0a0a0';

beforeAll(async () => {
  config = await provisionTestResources('agent-versions');
  parts = localPartsFor(config, { overrides: { log: new RecordingLog() }, flowRetryIntervalMs: 0 });
  for (const node of nodes) await parts.meshService.addNode(node, {}, localActor());
});

describe('agent versions set on a wave’s nodes', () => {
  it('leaves a node removed between its read and its write, and sets every other', async () => {
    const raw = makeDynamoDBClient(config);
    const other = documentClient(makeDynamoDBClient(config));
    let removedMeanwhile = false;
    // the node goes (mesh remove, say) after the wave read it and before its first transaction
    raw.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'TransactWriteItemsCommand' && !removedMeanwhile) {
          removedMeanwhile = true;
          await other.send(
            new DeleteCommand({ TableName: config.inventoryTable, Key: nodeItemKey(removed) }),
          );
        }
        return next(args);
      },
      { step: 'initialize' },
    );
    const client = documentClient(raw);
    const versions = new DynamoAgentVersions({ client, tableName: config.inventoryTable });
    const before = await versions.setAgentVersion('2.0.0', nodes, rollout, 20);
    expect(removedMeanwhile).toBe(true);
    // no host reported a version: none known before
    expect(before).toEqual([]);
    const items = await getItems(client, 'test', config.inventoryTable, nodes.map(nodeItemKey));
    expect(items.has(`${nodeItemKey(removed).pk}|${nodeItemKey(removed).sk}`)).toBe(false);
    const set = [...items.values()];
    expect(set).toHaveLength(nodes.length - 1);
    for (const item of set)
      expect(item).toMatchObject({
        agentVersion: '2.0.0',
        agentBefore: { [rollout]: { before: null, set: '2.0.0' } },
      });

    await versions.restoreAgentVersion(rollout, '2.0.0', nodes);
    const back = [
      ...(await getItems(client, 'test', config.inventoryTable, nodes.map(nodeItemKey))).values(),
    ];
    expect(back).toHaveLength(nodes.length - 1);
    for (const item of back) {
      expect(item).not.toHaveProperty('agentVersion');
      expect(item).not.toHaveProperty('agentBefore');
    }
    raw.destroy();
  });

  it('says what each host would be asked, by version and by the architecture it reports, writing nothing', async () => {
    // ask-x runs 1.0.0 on x64, ask-a 1.1.0 on arm64, ask-n has said nothing
    const hosts = { 'ask-x': ['x64', '1.0.0'], 'ask-a': ['arm64', '1.1.0'] } as const;
    const asking = ['ask-x', 'ask-a', 'ask-n'];
    for (const node of asking) await parts.meshService.addNode(node, {}, localActor());
    for (const [node, [arch, agent]] of Object.entries(hosts)) {
      const heardAt = new Date().toISOString();
      const facts = {
        os: 'debian-12',
        kernel: '6.1.0',
        arch,
        agent,
        cpus: 2,
        memoryBytes: 2 ** 30,
        bootedAt: heardAt,
      };
      await parts.reports.recordReport(
        { node, sentAt: heardAt, sequence: 1, state: 'heartbeat', revision: 0, facts },
        { heardAt, queuedAt: heardAt },
      );
    }
    const client = documentClient(makeDynamoDBClient(config));
    const versions = new DynamoAgentVersions({ client, tableName: config.inventoryTable });
    const upgrade = '20261206T080000000Z-b0b0b0';
    const nested = (asked: ReadonlyMap<string, ReadonlyMap<string | null, readonly string[]>>) =>
      Object.fromEntries([...asked].map(([version, byArch]) => [version, Object.fromEntries(byArch)]));
    expect(nested(await versions.askedOf(asking, { kind: 'set', version: '2.0.0' }))).toEqual({
      '2.0.0': { x64: ['ask-x'], arm64: ['ask-a'], null: ['ask-n'] },
    });
    const unset = await getItems(client, 'test', config.inventoryTable, asking.map(nodeItemKey));
    for (const item of unset.values()) expect(item).not.toHaveProperty('agentVersion');

    await versions.setAgentVersion('2.0.0', asking, upgrade, 20);
    // the undo sets each back to its own version; ask-n's is taken away: it is asked nothing
    expect(
      nested(await versions.askedOf(asking, { kind: 'restore', rollout: upgrade, version: '2.0.0' })),
    ).toEqual({
      '1.0.0': { x64: ['ask-x'] },
      '1.1.0': { arm64: ['ask-a'] },
    });
  });
});
