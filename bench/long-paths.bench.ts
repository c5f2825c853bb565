import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { enforcingQuotas, quotaAnswers } from '../lib/local/sdk-quotas.ts';
import { DynamoDBAuditTrail } from '../lib/server/adapters/audit/audit-trail.ts';
import { makeDynamoDBClient } from '../lib/server/adapters/aws-clients.ts';
import {
  assignmentKey,
  carrierKey,
  moduleKey,
  nodeItem,
} from '../lib/server/adapters/dynamodb/mesh-items.ts';
import { documentClient, writeItems } from '../lib/server/adapters/dynamodb/requests.ts';
import { DynamoDBModuleVersions } from '../lib/server/adapters/mesh/module-versions.ts';
import { DynamoDBSummaryStore } from '../lib/server/adapters/summary/summary-store.ts';
import { localActor } from '../lib/server/core/audit/record.ts';
import { upgradeMarginMs } from '../lib/server/core/control/settle.ts';
import { countersOf } from '../lib/server/core/summary/counters.ts';
import { summaryOf } from '../lib/server/core/summary/summary.ts';
import { StoreUnavailableError } from '../lib/server/core/unavailable.ts';
import { steppingFlows } from '../lib/server/flows/stepping-flows.ts';
import type { MeshConfig } from '../lib/server/setup/config.ts';
import { consumerTimeoutSeconds } from '../lib/server/setup/resources.ts';
import { runSteppingFlow } from '../test/support/history-events.ts';
import { drainShards, shardedWalk } from '../test/support/stream-shards.ts';
import { type BenchEnvironment, benchEnvironment } from './support/environment.ts';
import type { BenchTable } from './support/table.ts';

/**
 * Issue 38, part C: the long and the high-throughput paths against AWS's quotas.
 * - the rollout flow run from its ASL for 24 simulated hours, its Advance answering "wait 10 s",
 *   beside the same flow without its continuation (Advance → Finished → Wait, the shape before issue 38):
 *   history events per execution and per rollout-hour, counted as AWS counts them;
 * - the summary's aggregator with 4 shards applied in parallel, on a client that answers
 *   `TransactionConflict` as AWS does, against the walk's items counted;
 * - the control queue's throughput for 50,000 reports a minute: AWS's documented figures for
 *   each FIFO mode (not measured: no emulator models SQS's partitions);
 * - an upgrade of `MESH_BENCH_CARRIERS` carriers (default 50,000) in passes bounded as the
 *   consumer bounds them (30 s less the push's 20 s and a 3 s margin), on DynamoDB Local.
 */
const carrierCount = Number(process.env.MESH_BENCH_CARRIERS ?? 50_000);
const shardWrites = Number(process.env.MESH_BENCH_SHARD_WRITES ?? 20_000);
const pushTimeoutMs = 20_000;

export async function run(): Promise<BenchTable[]> {
  const environment = await benchEnvironment();
  try {
    return [await history(), await summaryShards(environment), queue(), await upgradeFanOut(environment)];
  } finally {
    await environment.stop();
  }
}

export async function history(): Promise<BenchTable> {
  const flow = steppingFlows.rollout;
  const definition = JSON.parse(readFileSync(flow.aslPath, 'utf8'));
  const { Count: _count, ContinueAsNew: _continue, ...kept } = definition.States;
  const before = {
    ...definition,
    States: {
      ...kept,
      Finished: { ...kept.Finished, Choices: [kept.Finished.Choices[0]] },
      Wait: { ...kept.Wait, Next: 'Advance' },
    },
  };
  const beforePath = join(tmpdir(), 'rollout-before.asl.json');
  writeFileSync(beforePath, JSON.stringify(before));
  const rows: Array<Array<string | number>> = [];
  for (const [label, path] of [
    ['before: Advance → Finished → Wait', beforePath],
    ['after: continues every 1,500 loops', flow.aslPath],
  ] as const) {
    const started = performance.now();
    const { executions } = await runSteppingFlow(path, 24);
    const total = executions.reduce((sum, e) => sum + e.events, 0);
    const most = Math.max(...executions.map((e) => e.events));
    rows.push([
      label,
      executions.length,
      most,
      Math.round(total / 24),
      most > 25_000 ? `fails after ${(25_000 / (total / 24)).toFixed(1)} h` : 'fits',
      Math.round(performance.now() - started),
    ]);
  }
  return {
    title: 'A rollout for 24 hours, its Advance answering "wait 10 s" (8,640 loops)',
    columns: [
      'flow',
      'executions',
      'most events in one',
      'events a rollout-hour',
      'Standard 25,000',
      'ms to run',
    ],
    rows,
    notes: [
      'events counted as AWS counts them from aws-local-stepfunctions runs (test/support/history-events.ts)',
    ],
  };
}

export async function summaryShards(environment: BenchEnvironment): Promise<BenchTable> {
  {
    const config = await environment.provision('bench-long-summary');
    const dynamodb = enforcingQuotas(makeDynamoDBClient(config));
    const conflictsBefore = quotaAnswers.conflicts;
    const client = documentClient(dynamodb);
    const store = new DynamoDBSummaryStore({
      client,
      tableName: config.inventoryTable,
      audit: new DynamoDBAuditTrail({ client, tableName: config.inventoryTable, retentionDays: 1 }),
    });
    const walk = shardedWalk({ seed: 38, nodes: 50_000, writes: shardWrites, shards: 4, firstSequence: 1 });
    const started = performance.now();
    const drained = await drainShards(store, walk.shards, { batch: 100, again: true });
    const ms = performance.now() - started;
    const summary = await store.summary();
    const expected = summaryOf(countersOf(walk.items), true);
    return {
      title: `The summary under 4 parallel stream shards (${shardWrites} writes over 50,000 nodes, each batch of 100 delivered again whole and halved)`,
      columns: [
        'batches',
        'conflicts',
        'failed batches',
        'nodes counted',
        'nodes in the items',
        'exact',
        'changes a second',
      ],
      rows: [
        [
          drained.batches,
          quotaAnswers.conflicts - conflictsBefore,
          drained.failures.length,
          summary.nodes,
          expected.nodes,
          JSON.stringify({ ...summary, exact: true }) === JSON.stringify(expected) ? 'yes' : 'NO',
          Math.round((shardWrites * 1000) / ms),
        ],
      ],
      notes: [
        'before (shared counter items): test/integration/summary-shards.test.ts met 40 conflicts in a walk of 600 writes',
        ...[...new Set(drained.failures.map((failure) => failure.replace(/^[^:]*: /, '')))].map(
          (reason) => `a failed batch, delivered again: ${reason}`,
        ),
      ],
    };
  }
}

export function queue(): BenchTable {
  const reportsPerSecond = Math.ceil(50_000 / 60);
  const modes: Array<[string, number]> = [
    ['FIFO, throughput per queue (before)', 300],
    ['high-throughput FIFO, lowest region figure', 2_400],
    ['high-throughput FIFO, us-east-1 / us-west-2 / eu-west-1', 70_000],
  ];
  return {
    title: `The control queue: 50,000 reports a minute are ${reportsPerSecond} SendMessage a second (one a report)`,
    columns: ['mode', 'SendMessage a second (AWS)', '50,000 reports take', 'headroom'],
    rows: modes.map(([mode, calls]) => [
      mode,
      calls,
      `${Math.max(60, Math.ceil(50_000 / calls))} s`,
      `${(calls / reportsPerSecond).toFixed(1)}×`,
    ]),
    notes: [
      "AWS's documented quotas (Amazon SQS message quotas), not measured: docs/control-queue.md#throughput",
    ],
  };
}

export type FanOutFigures = {
  readonly carriers: number;
  readonly passes: number;
  readonly held: number;
  readonly longestPassMs: number;
  readonly totalMs: number;
  /** Carrier items the passes read, in all. */
  readonly itemsRead: number;
  readonly seededMs: number;
  /** Each pass's time: the consumer's time less the push's and a margin. */
  readonly budgetMs: number;
};

/**
 * An upgrade of `carriers` carriers on `config`'s tables, in passes bounded as the consumer
 * bounds them, each continuation going on after the last carrier walked as the consumer's
 * follow-up message says, every request holding the enforced quotas.
 */
export async function fanOut(config: MeshConfig, carriers: number): Promise<FanOutFigures> {
  const dynamodb = enforcingQuotas(makeDynamoDBClient(config, { requestTimeoutMs: 30_000 }));
  let itemsRead = 0;
  dynamodb.middlewareStack.add(
    (next, context) => async (args) => {
      const answer = await next(args);
      if (context.commandName === 'QueryCommand')
        itemsRead += (answer.output as { Count?: number }).Count ?? 0;
      return answer;
    },
    { step: 'initialize', name: 'fanOutBenchMeter' },
  );
  const client = documentClient(dynamodb);
  // seeding is the bench's, not the path's: it may wait on DynamoDB Local longer
  const seeder = documentClient(makeDynamoDBClient(config, { requestTimeoutMs: 30_000 }));
  const audit = new DynamoDBAuditTrail({ client, tableName: config.inventoryTable, retentionDays: 1 });
  const versions = new DynamoDBModuleVersions({ client, tableName: config.inventoryTable, audit });
  const module = 'app';
  const now = new Date().toISOString();
  const items = [{ ...moduleKey(module), module, kind: 'service', version: '1.0' }];
  for (let i = 0; i < carriers; i += 1) {
    const node = `node-${String(i).padStart(6, '0')}`;
    items.push(
      nodeItem(node, now) as never,
      { ...assignmentKey(node, module), module, version: '1.0' } as never,
      { ...carrierKey(module, node), node, version: '1.0' } as never,
    );
  }
  const seeding = performance.now();
  // in slices, each asked again while DynamoDB Local (on shared cores) does not answer in time
  for (let start = 0; start < items.length; start += 1_000)
    for (let attempt = 1; ; attempt += 1)
      try {
        await writeItems(seeder, 'the bench carriers', config.inventoryTable, {
          puts: items.slice(start, start + 1_000),
        });
        break;
      } catch (error) {
        if (attempt >= 5) throw error;
      }
  const seededMs = performance.now() - seeding;
  const budgetMs = consumerTimeoutSeconds * 1000 - pushTimeoutMs - upgradeMarginMs;
  const passes: number[] = [];
  const started = performance.now();
  let held = 0;
  let after: string | undefined;
  for (let more = true; more; ) {
    const pass = performance.now();
    try {
      const answer = await versions.setModuleVersion(module, '2.0', localActor(), {
        until: Date.now() + budgetMs,
        ...(passes.length > 0 ? { continues: true } : {}),
        ...(after !== undefined ? { after } : {}),
      });
      more = answer.more;
      after = answer.next;
      passes.push(performance.now() - pass);
    } catch (error) {
      // the message held and settled again, as the consumer does with a store that did not answer
      if (!(error instanceof StoreUnavailableError) || held >= 20) throw error;
      held += 1;
    }
  }
  const totalMs = performance.now() - started;
  dynamodb.destroy();
  return {
    carriers,
    passes: passes.length,
    held,
    longestPassMs: Math.max(...passes),
    totalMs,
    itemsRead,
    seededMs,
    budgetMs,
  };
}

async function upgradeFanOut(environment: BenchEnvironment): Promise<BenchTable> {
  const config = await environment.provision('bench-long-upgrade');
  const figures = await fanOut(config, carrierCount);
  return {
    title: `An upgrade of ${carrierCount} carriers in passes of ${(figures.budgetMs / 1000).toFixed(0)} s (the consumer's ${consumerTimeoutSeconds} s less the push's and a margin), DynamoDB Local`,
    columns: [
      'passes',
      'held and settled again',
      'longest pass s',
      'total s',
      'ms a carrier',
      'carriers read',
      'seeding s',
    ],
    rows: [
      [
        figures.passes,
        figures.held,
        (figures.longestPassMs / 1000).toFixed(1),
        (figures.totalMs / 1000).toFixed(1),
        (figures.totalMs / carrierCount).toFixed(2),
        figures.itemsRead,
        (figures.seededMs / 1000).toFixed(1),
      ],
    ],
    notes: [
      `before: one pass of every carrier in one invocation, which at this rate outlives the consumer's ${consumerTimeoutSeconds} s past ${Math.floor((consumerTimeoutSeconds * carrierCount * 1000) / figures.totalMs)} carriers and comes back after the 180 s visibility`,
      `carriers read: each pass reads from after the last carrier the pass before walked; a pass that read every carrier again would read ${figures.passes * carrierCount}`,
      'a pass overruns its time by at most one round of 8 transactions and the carriers query',
    ],
  };
}
