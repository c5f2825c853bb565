import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { localPartsFor } from '../../lib/local/parts.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import { documentClient } from '../../lib/server/adapters/dynamodb/requests.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
import { lagIndexes } from '../support/lagging-indexes.ts';
import {
  emptyCoverage,
  expectCoverage,
  type ModelWorld,
  operations,
  runSequence,
} from '../support/mesh-model.ts';
import { provisionTestResources } from '../support/resources.ts';
import { enrolInStore } from '../support/sealing.ts';

let config: MeshConfig;

beforeAll(async () => {
  config = await provisionTestResources('model');
});

function laggingWorld(): { world: ModelWorld; parts: Parts; staleReads: () => number } {
  const client = makeDynamoDBClient(config);
  const { staleReads } = lagIndexes(client);
  const parts = localPartsFor(config, { clients: { dynamodb: client }, flowRetryIntervalMs: 0 });
  const world: ModelWorld = {
    addNode: async (node) => {
      await parts.meshService.addNode(node, {}, localActor());
      await enrolInStore(documentClient(client), config.inventoryTable, node);
    },
    assign: (node, module, provides) => parts.meshService.assign(node, module, provides, localActor()),
    consume: (consumer, provider) => parts.meshService.consume(consumer, provider, localActor()),
    unconsume: (consumer, provider) => parts.meshService.unconsume(consumer, provider, localActor()),
    unassign: (node, module, cascade) => parts.meshService.unassign(node, module, cascade, localActor()),
    removeNode: (node, cascade) => parts.meshService.removeNode(node, cascade, localActor()),
    rotate: (consumer, provider) => parts.meshService.rotate(consumer, provider, localActor()),
    moduleVersions: parts.moduleVersions,
    push: (request) => parts.pushFlow.push(request),
    readNode: (node) => parts.pushStore.readNode(node),
    readSealingKeys: (nodes) => parts.pushStore.readSealingKeys(nodes),
  };
  return { world, parts, staleReads };
}

describe('the mesh model on DynamoDB Local, every index read stale, through the real ASL', () => {
  // Thirty sequences through the ASL on DynamoDB Local: about 15 s on an idle machine.
  it('after every push, behind is exactly what a from-scratch compose finds', {
    timeout: 180_000,
  }, async () => {
    const { world, staleReads } = laggingWorld();
    const coverage = emptyCoverage();
    let run = 0;
    await fc.assert(
      fc.asyncProperty(operations, async (steps) => {
        run += 1;
        await runSequence(world, steps, coverage, `m${run}`);
        // Sequences share the tables: each leaves the mesh consistent for the next.
        expect((await world.push({ behind: true, maxRounds: 50 })).behind).toEqual([]);
      }),
      { numRuns: 30, seed: 83, endOnFailure: true },
    );
    console.info('mesh model coverage on DynamoDB Local', coverage);
    expectCoverage(coverage);
    expect(staleReads()).toBeGreaterThan(0);
  });
});
