import { BatchWriteItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { localPartsFor } from '../lib/local/parts.ts';
import { DynamoDBAuditReader } from '../lib/server/adapters/audit/audit-reader.ts';
import { type AuditTrail, auditItems, DynamoDBAuditTrail } from '../lib/server/adapters/audit/audit-trail.ts';
import { makeDynamoDBClient } from '../lib/server/adapters/aws-clients.ts';
import { documentClient, type TransactItem, transact } from '../lib/server/adapters/dynamodb/requests.ts';
import { DynamoDBTokenStore } from '../lib/server/adapters/enrolment/token-store.ts';
import { DynamoDBMeshChangeStore } from '../lib/server/adapters/mesh/mesh-change-store.ts';
import { type ChainHead, localActor, nextRecord } from '../lib/server/core/audit/record.ts';
import { issueToken } from '../lib/server/core/enrolment/tokens.ts';
import { mapLimit } from '../lib/server/core/map-limit.ts';
import { MeshService } from '../lib/server/core/mesh/service.ts';
import { benchEnvironment } from './support/environment.ts';
import { median, percentile } from './support/stats.ts';
import type { BenchTable } from './support/table.ts';

/** Sums the units DynamoDB Local says each call consumed, as writes or reads by the call's kind. */
function meter(client: DynamoDBClient) {
  const units = { write: 0, read: 0 };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      (args.input as Record<string, unknown>).ReturnConsumedCapacity = 'TOTAL';
      const result = await next(args);
      const consumed = (result.output as { ConsumedCapacity?: unknown }).ConsumedCapacity;
      const writes = /^(TransactWriteItems|PutItem|UpdateItem|DeleteItem|BatchWriteItem)/.test(
        context.commandName ?? '',
      );
      for (const entry of [consumed ?? []].flat() as Array<{ CapacityUnits?: number }>)
        units[writes ? 'write' : 'read'] += entry.CapacityUnits ?? 0;
      return result;
    },
    { step: 'initialize', name: 'auditBenchMeter' },
  );
  return units;
}

/** Today's way: the change's transaction alone, no record. */
const unrecorded = (client: ReturnType<typeof documentClient>): AuditTrail => ({
  transact: (what: string, items: readonly TransactItem[]) => transact(client, what, items),
});

const changes = 200;
const chains = 1_000;
const perChain = 100;

/**
 * What the audit record costs a change, beside the same change without it, in one run on
 * DynamoDB Local: the latency of a token issue and a node add, and the write and read units each
 * consumed (the record adds a head read and two or three items to the transaction); then
 * `mesh audit verify` over 100,000 records (1,000 chains of 100, seeded directly in batches).
 */
export async function run(): Promise<BenchTable[]> {
  const environment = await benchEnvironment();
  try {
    const config = await environment.provision('bench-audit');
    const raw = makeDynamoDBClient(config);
    const units = meter(raw);
    const client = documentClient(raw);
    const table = { client, tableName: config.inventoryTable };
    const recorded = new DynamoDBAuditTrail({ ...table, retentionDays: 365 });
    const ways = [
      { name: 'without the record', trail: unrecorded(client) },
      { name: 'with the record', trail: recorded },
    ];
    const rows: Array<Array<string | number>> = [];
    const removals = localPartsFor(config).meshRemovals;
    const runs = ways.map((way) => {
      const service = new MeshService({
        store: new DynamoDBMeshChangeStore({ ...table, audit: way.trail }),
        removals,
      });
      const tokens = new DynamoDBTokenStore({
        ...table,
        identityTable: config.identityTable,
        audit: way.trail,
      });
      const prefix = way.name.startsWith('with ') ? 'w' : 'o';
      const node = (i: number) => `${prefix}-node-${i < 0 ? `warm${-i}` : i}`;
      return {
        name: way.name,
        changes: {
          'node add': (i: number) => service.addNode(node(i), {}, localActor()),
          'token issue': (i: number) => issueToken(node(i), 3600, { tokens }, localActor()),
        },
      };
    });
    // The two ways side by side, change by change, their order swapped each time: a loaded
    // machine's drift falls on both alike.
    for (const change of ['node add', 'token issue'] as const) {
      const taken = runs.map(() => ({ times: [] as number[], write: 0, read: 0 }));
      for (let i = -10; i < changes; i += 1) {
        const order = i % 2 === 0 ? [0, 1] : [1, 0];
        for (const at of order) {
          const before = { ...units };
          const started = performance.now();
          await runs[at]?.changes[change](i);
          if (i < 0) continue;
          const sample = taken[at] as (typeof taken)[number];
          sample.times.push(performance.now() - started);
          sample.write += units.write - before.write;
          sample.read += units.read - before.read;
        }
      }
      runs.forEach((run, at) => {
        const sample = taken[at] as (typeof taken)[number];
        rows.push([
          change,
          run.name,
          median(sample.times).toFixed(2),
          percentile(sample.times, 95).toFixed(2),
          (sample.write / changes).toFixed(1),
          (sample.read / changes).toFixed(1),
        ]);
      });
    }

    // 100,000 records in valid chains, put directly 25 at a time.
    const now = new Date().toISOString();
    const puts: Record<string, unknown>[] = [];
    for (let c = 0; c < chains; c += 1) {
      let head: ChainHead | undefined;
      for (let s = 0; s < perChain; s += 1) {
        const record = nextRecord(
          {
            by: localActor(`seed-${c}-${s}`),
            action: 'token.issue',
            subject: `node:seed-${c}`,
            target: `node:seed-${c}`,
          },
          head,
          { time: now, retentionDays: 365 },
        );
        for (const item of auditItems(record, head, config.inventoryTable))
          if (item.Put && (s === perChain - 1 || !String(item.Put.Item?.sk).startsWith('head')))
            puts.push(item.Put.Item as Record<string, unknown>);
        head = { seq: record.seq, hash: record.hash, expiresAt: record.expiresAt };
      }
    }
    const batches = Array.from({ length: Math.ceil(puts.length / 25) }, (_, i) =>
      puts.slice(i * 25, i * 25 + 25),
    );
    const seedStarted = performance.now();
    await mapLimit(batches, 8, async (batch) => {
      let pending = batch.map((item) => ({
        PutRequest: { Item: marshall(item, { removeUndefinedValues: true }) },
      }));
      while (pending.length > 0) {
        const { UnprocessedItems } = await raw.send(
          new BatchWriteItemCommand({ RequestItems: { [config.inventoryTable]: pending } }),
        );
        pending = (UnprocessedItems?.[config.inventoryTable] ?? []) as typeof pending;
      }
    });
    const seedMs = performance.now() - seedStarted;

    const reader = new DynamoDBAuditReader({ ...table, retentionDays: 365 });
    const rssBefore = process.memoryUsage().rss;
    const readsBefore = units.read;
    const verifyStarted = performance.now();
    let verdict = await reader.verify();
    let walked = { chains: verdict.chains, records: verdict.records, findings: verdict.findingCount };
    while (verdict.next) {
      verdict = await reader.verify({ after: verdict.next });
      walked = {
        chains: walked.chains + verdict.chains,
        records: walked.records + verdict.records,
        findings: walked.findings + verdict.findingCount,
      };
    }
    const verifyMs = performance.now() - verifyStarted;
    const rssGrowth = (process.memoryUsage().rss - rssBefore) / 2 ** 20;

    return [
      {
        title: `the audit record's cost per change (${changes} changes each, one at a time, DynamoDB Local)`,
        columns: ['change', 'way', 'median ms', 'p95 ms', 'write units', 'read units'],
        rows,
        notes: [
          'with the record: the chain head read (strongly consistent GetItem), then the record and its head put in the change’s transaction (a chain’s first record also puts its entry in the list of chains)',
          'units as DynamoDB Local reports them (a transaction: two write units per item of up to 1 KB); the two ways interleaved, their order swapped each change',
        ],
      },
      {
        title: 'mesh audit verify over 100,000 records',
        columns: [
          'chains',
          'records',
          'findings',
          'seed s',
          'verify s',
          'records/s',
          'read units',
          'RSS growth MB',
        ],
        rows: [
          [
            walked.chains,
            walked.records,
            walked.findings,
            (seedMs / 1000).toFixed(1),
            (verifyMs / 1000).toFixed(1),
            Math.round(walked.records / (verifyMs / 1000)),
            Math.round(units.read - readsBefore),
            rssGrowth.toFixed(1),
          ],
        ],
        notes: [
          '1,000 chains of 100 records seeded with BatchWriteItem, then every chain walked a page at a time, in one process',
        ],
      },
    ];
  } finally {
    await environment.stop();
  }
}
