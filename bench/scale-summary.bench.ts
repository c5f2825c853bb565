import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { startLocalApi } from '../lib/local/http-server.ts';
import { localPartsFor } from '../lib/local/parts.ts';
import { startStreamSource } from '../lib/local/stream-source.ts';
import { makeDynamoDBClient } from '../lib/server/adapters/aws-clients.ts';
import { enrolmentItemKey, presenceItemKey, reportItemKey } from '../lib/server/adapters/dynamodb/keys.ts';
import { markKey } from '../lib/server/adapters/dynamodb/mesh-items.ts';
import { documentClient, type Item } from '../lib/server/adapters/dynamodb/requests.ts';
import type { Summary } from '../lib/server/core/summary/summary.ts';
import { functionSpecs } from '../lib/server/functions/table.ts';
import { nodeName, seed, seedItems } from './push.bench.ts';
import { benchEnvironment } from './support/environment.ts';
import { median, percentile, sample } from './support/stats.ts';
import type { BenchTable } from './support/table.ts';

/**
 * The summary (GET /summary, kept by the stream aggregator) beside today's full read
 * (GET /status) at fleet sizes, in the same run. The mesh is push.bench.ts's, seeded through
 * the store with batch writes while the aggregator reads the table's stream, plus what hosts
 * leave: enrolments, reports (one in fifty failed on a newer revision), presence (nine in ten
 * online) and a few marks. The counters are built by the aggregator, as on AWS; how long the
 * stream took to drain after the seed is shown too. `MESH_BENCH_SUMMARY_SIZES` (default
 * 10000,50000) sets the sizes; at the largest the full read is timed once.
 */
const sizes = (process.env.MESH_BENCH_SUMMARY_SIZES ?? '10000,50000').split(',').map(Number);

function hostItems(size: number): Item[] {
  const items: Item[] = [];
  const at = '2026-01-01T00:00:00.000Z';
  for (let i = 0; i < size; i += 1) {
    const node = nodeName(i);
    items.push({ ...enrolmentItemKey(node), node, enrolledAt: at, thumbprint: `t-${i}` });
    const failed = i % 50 === 7;
    items.push({
      ...reportItemKey(node),
      sequence: 2,
      state: failed ? 'failed' : 'applied',
      revision: failed ? 2 : 1,
      sentAt: at,
      heardAt: at,
      appliedRevision: 1,
      appliedAt: at,
    });
    items.push({ ...presenceItemKey(node), online: i % 10 !== 3, heardAt: at, atMs: 0, version: 1 });
    if (i % 100 === 42) items.push({ ...markKey(node), node, marks: 1, markedAt: at });
  }
  return items;
}

export async function run(): Promise<BenchTable[]> {
  const environment = await benchEnvironment();
  const rows: Array<Array<string | number>> = [];
  const notes: string[] = [];
  const aggregator = functionSpecs.find((spec) => spec.trigger === 'stream');
  if (aggregator?.trigger !== 'stream')
    throw new Error('lib/server/functions/table.ts has no stream function');
  try {
    for (const size of sizes) {
      const config = await environment.provision(`bench-summary-${size}`);
      const parts = localPartsFor(config);
      const dynamodb = makeDynamoDBClient(config);
      const source = startStreamSource({
        dynamodb,
        config,
        tableName: config.inventoryTable,
        handler: aggregator.handler(parts),
        functionName: aggregator.name,
        onError: (error) => process.stderr.write(`bench scale-summary: aggregator: ${error.message}\n`),
      });
      const items = [...seedItems(size), ...hostItems(size)];
      const seeding = performance.now();
      // a patient client: on a shared machine a batch write can take longer than the product's 3 s
      const seeder = new DynamoDBClient({
        region: config.region,
        endpoint: config.endpoints?.dynamodb,
        credentials: { accessKeyId: 'meshlocal', secretAccessKey: 'meshlocal' },
        maxAttempts: 10,
        requestHandler: { requestTimeout: 60_000 },
      });
      await seed(documentClient(seeder), config.inventoryTable, items);
      seeder.destroy();
      const seeded = performance.now();
      await source.caughtUp();
      const drained = performance.now();
      await source.stop();
      process.stderr.write(`bench scale-summary: ${size} nodes seeded and counted\n`);
      notes.push(
        `${size} nodes: ${items.length} items seeded in ${((seeded - seeding) / 1000).toFixed(1)} s; the aggregator had counted them ${((drained - seeded) / 1000).toFixed(1)} s after the last write`,
      );

      const api = await startLocalApi({ port: 0, parts });
      try {
        // A full read the function cannot finish in its time answers 500: that is today's figure too.
        const timed = async (path: string, count: number, warmup: number) => {
          let bytes = 0;
          let body: unknown;
          let failed: string | undefined;
          const times = await sample(
            count,
            async () => {
              const answer = await fetch(`${api.url}${path}`);
              const raw = await answer.arrayBuffer();
              if (!answer.ok) failed = `answered ${answer.status}`;
              else {
                bytes = raw.byteLength;
                body = JSON.parse(Buffer.from(raw).toString());
              }
            },
            warmup,
          );
          return { times, bytes, body, failed };
        };
        const summary = await timed('/summary', 15, 3);
        const fullReads = size >= 50_000 ? 1 : 3;
        const status = await timed('/status', fullReads, 0);
        const counted = summary.body as Summary;
        const listed = (status.body as { nodes: unknown[] } | undefined)?.nodes.length;
        const row = (route: string, result: Awaited<ReturnType<typeof timed>>, runs: number) => [
          size,
          result.failed ? `${route}: ${result.failed}` : route,
          median(result.times),
          percentile(result.times, 90),
          kib(result.bytes),
          runs,
        ];
        rows.push(
          row('GET /summary (counters)', summary, 15),
          row('GET /status (full read)', status, fullReads),
        );
        notes.push(
          `${size} nodes: the summary counts ${counted.nodes} nodes, ${counted.online} online, ${counted.behind} behind; the full read lists ${listed ?? 'nothing (it failed)'}; ratio of medians ${(median(status.times) / median(summary.times)).toFixed(0)}×`,
        );
      } finally {
        await api.stop();
        dynamodb.destroy();
      }
    }
  } finally {
    await environment.stop();
  }
  return [
    {
      title:
        'The summary beside the full read, on DynamoDB Local (goal at 50,000 nodes: summary ≤ 300 ms median)',
      columns: ['nodes', 'route', 'median ms', 'p90 ms', 'answer KiB', 'runs'],
      rows,
      notes,
    },
  ];
}

const kib = (bytes: number) => Math.round((bytes / 1024) * 10) / 10;
