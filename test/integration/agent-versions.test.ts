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
const nodes = Array.from({ length: 30 }, (_, i) => `av-${String(i).padStart(2, '0')}`);
const removed = 'av-07';
const rollout = '20261206T070000000Z-a0a0a0';

beforeAll(async () => {
  config = await provisionTestResources('agent-versions');
  const parts = localPartsFor(config, { overrides: { log: new RecordingLog() }, flowRetryIntervalMs: 0 });
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
});
