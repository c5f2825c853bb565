import { gunzipSync, gzipSync } from 'node:zlib';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { makeDynamoDBClient } from '../lib/adapters/aws-clients.ts';
import { DynamoDBAuditTrail } from '../lib/adapters/dynamodb/audit-trail.ts';
import { documentClient, transact } from '../lib/adapters/dynamodb/requests.ts';
import { nodesPerPart } from '../lib/adapters/dynamodb/rollout-chunks.ts';
import { DynamoDBRolloutStore } from '../lib/adapters/dynamodb/rollout-store.ts';
import { localActor } from '../lib/core/audit/record.ts';
import type { PushOutcome } from '../lib/core/ports.ts';
import type { RolloutFacts } from '../lib/core/rollout/ports.ts';
import { newRollout, type RolloutRecord } from '../lib/core/rollout/record.ts';
import { newRolloutId, Rollouts, summaryOf } from '../lib/core/rollout/service.ts';
import { rolloutOptions } from '../lib/core/rollout/waves.ts';
import { jsonBytes, pageBytes } from '../lib/core/view-pages.ts';
import { benchEnvironment } from './support/environment.ts';
import { median } from './support/stats.ts';
import type { BenchTable } from './support/table.ts';

/**
 * A rollout's record at fleet sizes, store-level on DynamoDB Local (docs/decisions/rollouts-in-waves.md):
 * today's way (a header and its waves' nodes in parts, each node claimed) beside the one-item way
 * before it (the record whole, gzipped, in one item of at most 400 KB, so at most 5,000 nodes),
 * in the same run: starting a rollout, reading its first page (the one-item way: the record
 * whole), reading every page, and a step that sends the first wave (waves 1%,10%,100%).
 * `MESH_BENCH_ROLLOUT_SIZES` (default 5000,10000,50000), `MESH_BENCH_ROLLOUT_RUNS` (default 3).
 */
const sizes = (process.env.MESH_BENCH_ROLLOUT_SIZES ?? '5000,10000,50000').split(',').map(Number);
const runs = Number(process.env.MESH_BENCH_ROLLOUT_RUNS ?? 3);
const oneItemNodes = 5_000;
const options = rolloutOptions({ waves: '1%,10%,100%' });

const nodeNames = (size: number, run: string) =>
  Array.from({ length: size }, (_, i) => `${run}-node-${String(i).padStart(6, '0')}`);

const noFacts: RolloutFacts = { of: async () => new Map(), revisions: async () => new Map() };

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await fn();
  return { ms: performance.now() - started, value };
}

export async function run(): Promise<BenchTable[]> {
  const environment = await benchEnvironment();
  const rows: Array<Array<string | number>> = [];
  try {
    const config = await environment.provision('bench-rollout-store');
    const client = documentClient(makeDynamoDBClient(config));
    const store = new DynamoDBRolloutStore({
      client,
      tableName: config.inventoryTable,
      audit: new DynamoDBAuditTrail({ client, tableName: config.inventoryTable, retentionDays: 1 }),
    });
    const rollouts = new Rollouts({
      store,
      facts: noFacts,
      wave: async (nodes): Promise<PushOutcome> => ({
        pushed: null,
        flushed: nodes.map((node) => ({ node, revision: 1, round: 1 })),
        rounds: 1,
        behind: [],
      }),
      behind: async () => [],
      exists: async () => true,
      now: () => new Date(),
    });

    /** The one-item way: the record gzipped into one item with its running item, one transaction; read whole. */
    const oneItem = {
      async start(record: RolloutRecord) {
        const body = gzipSync(JSON.stringify(record));
        if (body.length > 380_000) throw new Error(`${body.length} bytes gzipped: over one item`);
        await transact(client, 'bench', [
          {
            Put: {
              TableName: config.inventoryTable,
              Item: { pk: 'bench-one-item', sk: record.id, state: record.state, version: 0, body },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
          {
            Put: { TableName: config.inventoryTable, Item: { pk: 'bench-one-item#running', sk: record.id } },
          },
        ]);
        return body.length;
      },
      async read(id: string) {
        const { Item } = await client.send(
          new GetCommand({
            TableName: config.inventoryTable,
            Key: { pk: 'bench-one-item', sk: id },
            ConsistentRead: true,
          }),
        );
        const record = JSON.parse(gunzipSync(Item?.body as Uint8Array).toString('utf8')) as RolloutRecord;
        return jsonBytes({ ...record, summary: summaryOf(record) });
      },
    };

    for (const size of sizes) {
      const now = { start: [] as number[], first: [] as number[], all: [] as number[], step: [] as number[] };
      const then = { start: [] as number[], read: [] as number[] };
      let pages = 0;
      let firstBytes = 0;
      let oneItemBytes = 0;
      let oneItemAnswer = 0;
      for (let r = 0; r < runs; r += 1) {
        const nodes = nodeNames(size, `s${size}r${r}`);
        const started = await timed(() =>
          rollouts.start({
            by: localActor(),
            origin: { kind: 'upgrade', module: 'web', version: `${size}.${r}` },
            nodes,
            options,
          }),
        );
        now.start.push(started.ms);
        const id = started.value.id;
        const first = await timed(() => rollouts.page(id, {}, pageBytes));
        now.first.push(first.ms);
        firstBytes = jsonBytes(first.value.page);
        const all = await timed(async () => {
          let count = 0;
          let at: number | null = 0;
          let layout: string | undefined;
          while (at !== null) {
            const page = await rollouts.page(id, { at, ...(layout ? { layout } : {}) }, pageBytes);
            layout = page.layout;
            at = page.next;
            count += 1;
          }
          return count;
        });
        now.all.push(all.ms);
        pages = all.value;
        now.step.push((await timed(() => rollouts.step(id))).ms);
        await rollouts.abort(id);

        if (size <= oneItemNodes) {
          const record = newRollout({
            id: newRolloutId(new Date()),
            origin: { kind: 'upgrade', module: 'web', version: `${size}.${r}` },
            nodes: nodeNames(size, `o${size}r${r}`),
            rollout: options,
            now: new Date().toISOString(),
          });
          const put = await timed(() => oneItem.start(record));
          then.start.push(put.ms);
          oneItemBytes = put.value;
          const read = await timed(() => oneItem.read(record.id));
          then.read.push(read.ms);
          oneItemAnswer = read.value;
        }
      }
      const ms = (values: number[]) => (values.length > 0 ? median(values).toFixed(0) : '-');
      rows.push([
        size,
        'parts + claims',
        ms(now.start),
        `${ms(now.first)} (${(firstBytes / 1024).toFixed(0)} KiB)`,
        `${ms(now.all)} (${pages} pages)`,
        ms(now.step),
      ]);
      rows.push([
        size,
        'one item',
        size <= oneItemNodes
          ? `${ms(then.start)} (${(oneItemBytes / 1024).toFixed(0)} KiB gz)`
          : 'refused: over 5,000',
        size <= oneItemNodes ? `${ms(then.read)} (whole: ${(oneItemAnswer / 1024).toFixed(0)} KiB)` : '-',
        '-',
        '-',
      ]);
      if (size <= oneItemNodes && then.start.length > 0)
        rows.push([
          size,
          'ratio (parts / one item)',
          (median(now.start) / median(then.start)).toFixed(1),
          (median(now.first) / median(then.read)).toFixed(1),
          '-',
          '-',
        ]);
    }
    client.destroy();
  } finally {
    await environment.stop();
  }
  return [
    {
      title: `rollout store on DynamoDB Local: median ms of ${runs} runs (waves 1%,10%,100%)`,
      columns: ['nodes', 'way', 'start', 'first page (its size)', 'every page', 'step: send wave 1'],
      rows,
      notes: [
        `a part holds at most ${nodesPerPart} nodes; a start claims each node, 50 to a transaction, 4 transactions in flight`,
        'the one-item way is the record as it was kept before parts: its read answered the record whole',
        'node names of 21 letters; DynamoDB Local in memory, on the shared machine (load in the note)',
      ],
    },
  ];
}
