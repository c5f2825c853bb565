import { gunzipSync, gzipSync } from 'node:zlib';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoDBAuditTrail } from '../lib/server/adapters/audit/audit-trail.ts';
import { makeDynamoDBClient } from '../lib/server/adapters/aws-clients.ts';
import { documentClient, transact } from '../lib/server/adapters/dynamodb/requests.ts';
import { nodesPerPart } from '../lib/server/adapters/rollout/rollout-chunks.ts';
import { RolloutClaims } from '../lib/server/adapters/rollout/rollout-claims.ts';
import { DynamoDBRolloutStore } from '../lib/server/adapters/rollout/rollout-store.ts';
import { jsonBytes, pageBytes } from '../lib/server/core/answer-pages.ts';
import { localActor } from '../lib/server/core/audit/record.ts';
import type { PushOutcome } from '../lib/server/core/push/ports.ts';
import type { RolloutFacts } from '../lib/server/core/rollout/ports.ts';
import { newRollout, type RolloutRecord } from '../lib/server/core/rollout/record.ts';
import { claimStep, newRolloutId, Rollouts, summaryOf } from '../lib/server/core/rollout/service.ts';
import { rolloutOptions } from '../lib/server/core/rollout/waves.ts';
import { benchEnvironment } from './support/environment.ts';
import { median } from './support/stats.ts';
import type { BenchTable } from './support/table.ts';

/**
 * A rollout's record at fleet sizes, store-level on DynamoDB Local (docs/decisions/rollouts-in-waves.md),
 * three ways in the same run:
 * - the job: the start writes the header and parts (`claiming`) and answers; the driver's steps
 *   (each bounded, service.ts `claimStep`) claim the nodes, then a step sends the first wave;
 * - claims first: every node claimed before the header is written, inside the start (as the
 *   start did before the job; kept here only, with the same claim transactions);
 * - one item: the record whole, gzipped, in one item of at most 400 KB (so at most 5,000 nodes).
 * Each: the start's answer; for the job, the claiming's total (from the start to running) and its
 * steps, the first page, every page, and the step that sends wave 1 (waves 1%,10%,100%).
 * `MESH_BENCH_ROLLOUT_SIZES` (default 5000,10000,50000), `MESH_BENCH_ROLLOUT_RUNS` (default 1).
 * Nothing is aborted after a run: letting go of 50,000 claims costs what claiming them does.
 */
const sizes = (process.env.MESH_BENCH_ROLLOUT_SIZES ?? '5000,10000,50000').split(',').map(Number);
const runs = Number(process.env.MESH_BENCH_ROLLOUT_RUNS ?? 1);
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
    const claims = new RolloutClaims(client, config.inventoryTable, () => new Date().toISOString());
    /** Claims first: every node claimed, then the header and parts written, all before the answer. */
    const claimsFirst = async (record: RolloutRecord) => {
      const own = record.waves.flatMap((w, cut) => (w.nodes ?? []).map((n) => ({ node: n.node, cut })));
      const stateOf = async (holder: string) => (await store.read(holder))?.state;
      const claimed = await claims.claimSome(record.id, own, stateOf, Number.POSITIVE_INFINITY);
      if ('overlap' in claimed) throw claimed.overlap;
      await store.create(record, localActor());
    };
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

    // one small rollout each way first, so the first size's figures are not the process warming up
    const warm = await rollouts.start({
      by: localActor(),
      origin: { kind: 'on', selector: 'warm-up' },
      nodes: nodeNames(500, 'warm'),
      options,
    });
    while ((await rollouts.step(warm.id)).decision.kind === 'claiming');
    await claimsFirst(
      newRollout({
        id: newRolloutId(new Date()),
        origin: { kind: 'on', selector: 'warm-up' },
        nodes: nodeNames(500, 'warm-first'),
        rollout: options,
        now: new Date().toISOString(),
      }),
    );
    for (const size of sizes) {
      const job = {
        start: [] as number[],
        claimed: [] as number[],
        steps: [] as number[],
        first: [] as number[],
        all: [] as number[],
        step: [] as number[],
      };
      const first = { start: [] as number[] };
      const then = { start: [] as number[], read: [] as number[] };
      let pages = 0;
      let firstBytes = 0;
      let oneItemBytes = 0;
      let oneItemAnswer = 0;
      for (let r = 0; r < runs; r += 1) {
        const nodes = nodeNames(size, `s${size}r${r}`);
        const began = performance.now();
        const started = await timed(() =>
          rollouts.start({
            by: localActor(),
            origin: { kind: 'upgrade', module: 'web', version: `${size}.${r}` },
            nodes,
            options,
          }),
        );
        job.start.push(started.ms);
        const id = started.value.id;
        let steps = 0;
        for (;;) {
          const { decision } = await rollouts.step(id);
          steps += 1;
          if (decision.kind !== 'claiming') {
            if (decision.kind !== 'claimed') throw new Error(`claiming ended ${decision.kind}`);
            break;
          }
        }
        job.claimed.push(performance.now() - began);
        job.steps.push(steps);
        const page = await timed(() => rollouts.page(id, {}, pageBytes));
        job.first.push(page.ms);
        firstBytes = jsonBytes(page.value.page);
        const all = await timed(async () => {
          let count = 0;
          let at: number | null = 0;
          let layout: string | undefined;
          while (at !== null) {
            const next = await rollouts.page(id, { at, ...(layout ? { layout } : {}) }, pageBytes);
            layout = next.layout;
            at = next.next;
            count += 1;
          }
          return count;
        });
        job.all.push(all.ms);
        pages = all.value;
        job.step.push((await timed(() => rollouts.step(id))).ms);

        const before = newRollout({
          id: newRolloutId(new Date()),
          origin: { kind: 'upgrade', module: 'api', version: `${size}.${r}` },
          nodes: nodeNames(size, `c${size}r${r}`),
          rollout: options,
          now: new Date().toISOString(),
        });
        first.start.push((await timed(() => claimsFirst(before))).ms);

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
        'job: parts, then claims by the driver',
        ms(job.start),
        `${ms(job.claimed)} (${ms(job.steps)} steps)`,
        `${ms(job.first)} (${(firstBytes / 1024).toFixed(0)} KiB)`,
        `${ms(job.all)} (${pages} pages)`,
        ms(job.step),
      ]);
      rows.push([size, 'claims first (before the job)', ms(first.start), '(in the start)', '-', '-', '-']);
      rows.push([
        size,
        'answer: claims first / job',
        (median(first.start) / median(job.start)).toFixed(0),
        '-',
        '-',
        '-',
        '-',
      ]);
      if (size <= oneItemNodes)
        rows.push([
          size,
          'one item',
          `${ms(then.start)} (${(oneItemBytes / 1024).toFixed(0)} KiB gz)`,
          '-',
          `${ms(then.read)} (whole: ${(oneItemAnswer / 1024).toFixed(0)} KiB)`,
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
      title: `rollout store on DynamoDB Local: median ms of ${runs} run${runs === 1 ? '' : 's'} (waves 1%,10%,100%)`,
      columns: [
        'nodes',
        'way',
        "start's answer",
        'claimed: from the start to running',
        'first page (its size)',
        'every page',
        'step: send wave 1',
      ],
      rows,
      notes: [
        `a part holds at most ${nodesPerPart} nodes; a claiming step takes at most ${claimStep.nodes} nodes and starts no round after ${claimStep.ms / 1000} s; claims go 50 to a transaction, 4 transactions in flight`,
        "claims first is the start as it was before the job: every claim made inside the start's request (here with the job's claim transactions, in one go)",
        'the one-item way is the record as it was kept before parts: its read answered the record whole',
        'node names of 21 letters; DynamoDB Local in memory, on the shared machine (load in the note)',
      ],
    },
  ];
}
