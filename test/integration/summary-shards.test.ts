import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localPartsFor } from '../../lib/local/parts.ts';
import { enforcingQuotas, quotaAnswers } from '../../lib/local/sdk-quotas.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import { documentClient } from '../../lib/server/adapters/dynamodb/requests.ts';
import { DynamoDBSummaryStore } from '../../lib/server/adapters/summary/summary-store.ts';
import { countersOf, type Item } from '../../lib/server/core/summary/counters.ts';
import { summaryOf } from '../../lib/server/core/summary/summary.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import { provisionTestResources } from '../support/resources.ts';
import { drainShards, type ShardedChanges, shardedWalk } from '../support/stream-shards.ts';

/**
 * Issue 38: on AWS a table's stream has several shards, and Lambda processes them in parallel.
 * The aggregator's writes for one shard must never meet another shard's: a seeded walk of item
 * writes is cut into 4 shards by partition (as DynamoDB's stream cuts it), each shard's batches
 * are applied at the same time as the others' (each batch delivered again, whole and halved, as
 * Lambda retries), and the summary is exactly the walk's final items counted.
 */
let config: MeshConfig;
// every request holds AWS's quotas as the local runtime's do: a conflict is answered as AWS answers it
const dynamodb = enforcingQuotas(makeDynamoDBClient({ region: process.env.AWS_REGION ?? 'us-east-1' }));
let clock = Date.parse('2026-12-05T00:00:00Z');
let store: DynamoDBSummaryStore;

beforeAll(async () => {
  config = await provisionTestResources('summaryshards');
  store = new DynamoDBSummaryStore({
    client: documentClient(dynamodb),
    tableName: config.inventoryTable,
    audit: localPartsFor(config).auditTrail,
    now: () => new Date(clock).toISOString(),
  });
});

afterAll(() => dynamodb.destroy());

const expected = (items: readonly Item[]) => summaryOf(countersOf(items), true);

describe('the summary under parallel stream shards', () => {
  let walk: ShardedChanges;

  it('counts 4 shards applied in parallel exactly, with no conflict between them', async () => {
    walk = shardedWalk({ seed: 38, nodes: 40, writes: 600, shards: 4, firstSequence: 1 });
    const conflicts = quotaAnswers.conflicts;
    const drained = await drainShards(store, walk.shards, { batch: 25, again: true });
    expect(drained.failures).toEqual([]);
    expect(quotaAnswers.conflicts - conflicts).toBe(0);
    expect(drained.batches).toBeGreaterThan(4 * 10);
    expect(await store.summary()).toEqual(expected(walk.items));
  });

  it('folds an idle shard into the mesh-wide counts, and reads the same', async () => {
    const before = await store.summary();
    clock += 2 * 3_600_000;
    const next = shardedWalk({
      seed: 39,
      nodes: 40,
      writes: 200,
      shards: 1,
      firstSequence: walk.lastSequence + 1,
      from: walk.items,
      shardIds: ['shard-next'],
    });
    const counted = await store.shardCounters();
    expect(counted.size).toBeGreaterThanOrEqual(4);
    await drainShards(store, next.shards, { batch: 50, again: false });
    // the 4 shards idle for two hours were folded by the new shard's first batch
    expect([...(await store.shardCounters()).keys()]).toEqual(['shard-next']);
    expect(await store.summary()).toEqual(expected(next.items));
    expect(before.nodes).toBe(expected(walk.items).nodes);
    // folded once: a later batch counts its change and folds nothing again
    const later = await store.apply('shard-next', [
      { sequence: String(next.lastSequence + 1), before: undefined, after: { pk: 'node#late', sk: 'node' } },
    ]);
    expect(later).toMatchObject({ applied: 1, writes: 1 });
  });
});
