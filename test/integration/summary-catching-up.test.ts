import { beforeAll, describe, expect, it } from 'vitest';
import { localPartsFor } from '../../lib/local/parts.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import { documentClient } from '../../lib/server/adapters/dynamodb/requests.ts';
import { DynamoDBSummaryStore } from '../../lib/server/adapters/summary/summary-store.ts';
import type { Change } from '../../lib/server/core/summary/stream.ts';
import {
  aggregatorBatchSize,
  catchingUpAfterSeconds,
  catchingUpForSeconds,
} from '../../lib/server/core/summary/stream.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
import { provisionTestResources } from '../support/resources.ts';

/**
 * Issue 36, finding 6: during a restart's catch-up the summary said `exact: true` while it
 * counted 2,134 of 2,673 nodes. The aggregator's batches say whether its shard is behind the
 * table (a full batch, or changes counted long after they were made); while one is, and batches keep coming, the
 * summary says `exact: false, catchingUp: true`, and exact again once a batch comes in time or
 * none has come for a while (the backlog read to its end).
 */
let parts: Parts;
let summary: DynamoDBSummaryStore;
let sequence = 1_000;
const nowSeconds = () => Math.floor(Date.now() / 1000);

/** `count` node items added, made `agoSeconds` before they are counted. */
const added = (count: number, agoSeconds: number): Change[] =>
  Array.from({ length: count }, () => {
    sequence += 1;
    return {
      sequence: String(sequence),
      before: undefined,
      after: { pk: `node#n${sequence}`, sk: 'node', node: `n${sequence}` },
      madeAt: nowSeconds() - agoSeconds,
    };
  });

beforeAll(async () => {
  parts = localPartsFor(await provisionTestResources('summarycatch'));
  summary = parts.summary as DynamoDBSummaryStore;
});

describe('the summary while its aggregator catches up', () => {
  it('is exact when each batch is counted as it comes', async () => {
    await summary.apply('shard-1', added(3, 0));
    expect(await summary.summary()).toMatchObject({ nodes: 3, exact: true });
    expect((await summary.summary()).catchingUp).toBeUndefined();
  });

  it('is not exact while batches of old changes are counted, and is again once a batch comes in time', async () => {
    // a restart reads the stream again: changes made minutes ago, a full batch of them
    await summary.apply('shard-1', added(aggregatorBatchSize, 600));
    expect(await summary.summary()).toMatchObject({ nodes: 103, exact: false, catchingUp: true });
    // a batch of changes already counted (delivered again) but old: still behind, still said
    const again = added(5, catchingUpAfterSeconds + 60);
    await summary.apply('shard-1', again);
    await summary.apply('shard-1', again);
    expect(await summary.summary()).toMatchObject({ nodes: 108, exact: false, catchingUp: true });
    // the last of the backlog, counted as it comes: caught up
    await summary.apply('shard-1', added(2, 1));
    const caughtUp = await summary.summary();
    expect(caughtUp).toMatchObject({ nodes: 110, exact: true });
    expect(caughtUp.catchingUp).toBeUndefined();
  });

  it('says a batch delivered again that is in time caught up, writing nothing else', async () => {
    const old = added(3, 900);
    await summary.apply('shard-2', old);
    expect((await summary.summary()).catchingUp).toBe(true);
    const fresh = added(1, 0);
    await summary.apply('shard-2', fresh);
    const applied = await summary.apply('shard-2', fresh);
    expect(applied).toMatchObject({ applied: 0, skipped: 1, writes: 0 });
    expect(await summary.summary()).toMatchObject({ exact: true });
  });

  it('says a full batch of changes made a moment ago is behind: more wait behind it', async () => {
    await summary.apply('shard-4', added(aggregatorBatchSize, 0));
    expect(await summary.summary()).toMatchObject({ exact: false, catchingUp: true });
    await summary.apply('shard-4', added(3, 0));
    expect((await summary.summary()).catchingUp).toBeUndefined();
  });

  it('takes a shard whose last batch was behind and no batch since for a while as read to its end', async () => {
    let now = Date.now();
    const clocked = new DynamoDBSummaryStore({
      client: documentClient(makeDynamoDBClient(parts.config)),
      tableName: parts.config.inventoryTable,
      audit: parts.auditTrail,
      now: () => new Date(now).toISOString(),
    });
    await clocked.apply('shard-3', added(4, 3_600));
    expect(await clocked.summary()).toMatchObject({ exact: false, catchingUp: true });
    now += (catchingUpForSeconds + 1) * 1000;
    expect(await clocked.summary()).toMatchObject({ exact: true });
  });
});
