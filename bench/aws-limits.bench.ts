import { awsQuotas, invocation } from '../lib/local/aws-quotas.ts';
import { localPartsFor } from '../lib/local/parts.ts';
import { enforcingQuotas } from '../lib/local/sdk-quotas.ts';
import { makeDynamoDBClient } from '../lib/server/adapters/aws-clients.ts';
import { enrolmentItemKey, nodeItemKey } from '../lib/server/adapters/dynamodb/keys.ts';
import { documentClient, type Item } from '../lib/server/adapters/dynamodb/requests.ts';
import { rolloutAdvanceHandler } from '../lib/server/api/handlers/rollouts.ts';
import { localActor } from '../lib/server/core/audit/record.ts';
import { rolloutOptions } from '../lib/server/core/rollout/waves.ts';
import { steppingFlows } from '../lib/server/flows/stepping-flows.ts';
import type { MeshConfig } from '../lib/server/setup/config.ts';
import { runSteppingFlow } from '../test/support/history-events.ts';
import { fanOut, history, queue, summaryShards } from './long-paths.bench.ts';
import { applyFleetFile } from './mesh-file-50k.bench.ts';
import { seed } from './push.bench.ts';
import { behindItems, pushBehind } from './push-state.bench.ts';
import { type BenchEnvironment, benchEnvironment } from './support/environment.ts';
import { median } from './support/stats.ts';
import type { BenchTable } from './support/table.ts';

/**
 * `npm run bench -- aws-limits`: every path issue 38 named, at 10,000 and 50,000 nodes
 * (MESH_BENCH_SIZES), run through the local runtime with AWS's quotas enforced
 * (docs/local-and-aws.md, "AWS's quotas, enforced here"), beside what the code before it did:
 * - `mesh push --behind` of N behind nodes (63-character names): push-run invoked within its
 *   timeout and handing itself on, the push flow's ASL with every state held to 256 KiB and
 *   each execution to Express's five minutes;
 * - a rollout of N nodes (`--waves 1,100% --wave-timeout 24h`) whose first host never answers,
 *   its flow run from the ASL through 24 simulated hours with the real rollout-advance against
 *   DynamoDB Local, history events counted as AWS counts them (Standard: 25,000);
 * - an upgrade of a module carried by N nodes, in passes bounded by the consumer's time;
 * - a fleet's mesh file of N nodes (20.6 MB at 50,000) uploaded in parts and applied as a job;
 * - the summary under parallel stream shards, and the queue's documented throughput.
 * A row that fails says with what: a path AWS would refuse fails here first. MESH_BENCH_PATHS
 * (push, rollout, upgrade, file) runs fewer paths.
 */
type Row = Array<string | number>;

const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
const mb = (bytes: number) => `${(bytes / 1e6).toFixed(2)} MB`;
const s = (ms: number) => (ms / 1000).toFixed(1);
const say = (text: string) => process.stderr.write(`bench aws-limits: ${text}\n`);

const paths = [
  ['push --behind', pushRow, 'push'],
  ['rollout, 24 h', rolloutRow, 'rollout'],
  ['upgrade fan-out', fanOutRow, 'upgrade'],
  ['mesh file applied', fileRow, 'file'],
] as const;

export async function run(): Promise<BenchTable[]> {
  const sizes = (process.env.MESH_BENCH_SIZES ?? '10000,50000').split(',').map(Number);
  // MESH_BENCH_PATHS=push,upgrade (say) runs fewer paths
  const chosen = (process.env.MESH_BENCH_PATHS ?? 'push,rollout,upgrade,file').split(',');
  const rows: Row[] = [];
  const notes: string[] = [];
  const before = await history();
  const beforeLoops = before.rows[0] as Row;
  for (const size of sizes) {
    for (const [path, measure] of paths.filter(([, , key]) => chosen.includes(key))) {
      const environment = await benchEnvironment();
      const started = performance.now();
      try {
        const config = await environment.provision(`lim-${size}-${Math.random().toString(36).slice(2, 8)}`);
        const row = await measure(config, size, beforeLoops, notes);
        rows.push(row);
        say(row.join(' | '));
      } catch (error) {
        const reason = `${(error as Error).name}: ${(error as Error).message}`.slice(0, 240);
        rows.push([path, size, '', '', '', s(performance.now() - started), `FAILED: ${reason}`]);
        say(`${path} at ${size}: failed: ${reason}`);
      } finally {
        await environment.stop();
      }
    }
  }
  const shared = await benchEnvironment();
  let shards: BenchTable | undefined;
  try {
    shards = await summaryShards(shared as BenchEnvironment);
  } finally {
    await shared.stop();
  }
  return [
    {
      title:
        'aws-limits: each path under the quotas the local runtime enforces, beside the code before issue 38',
      columns: ['path', 'nodes', 'AWS quota', 'before', 'measured', 's', 'outcome'],
      rows,
      notes: [
        ...notes,
        'before: what the code before issue 38 carried or did on the same path (measured or computed from the same run).',
        's: wall time on this machine (2 cores, shared); DynamoDB requests wait up to 30 s (3 s in the runtime).',
        'every DynamoDB request holds the enforced quotas (TransactionConflict among them); MESH_PARTITION_THROUGHPUT=on adds 1,000 WCU / 3,000 RCU a partition.',
      ],
    },
    before,
    ...(shards ? [shards] : []),
    queue(),
  ];
}

async function pushRow(config: MeshConfig, size: number): Promise<Row> {
  await seeded(config, size);
  const figures = await pushBehind(config);
  const old = figures.oldStateBytes;
  return [
    'push --behind',
    size,
    `state ≤ ${kib(awsQuotas.stateBytes)}; Express 5 min; push-run 15 min`,
    `≥ ${kib(old)} state: ${old > awsQuotas.stateBytes ? 'States.DataLimitExceeded' : 'fits'}`,
    `largest ${kib(figures.largest)} (${figures.largestState}); ${figures.executions} executions, ${figures.invocations} invocations; ${figures.flushed} flushed, ${figures.behind} behind`,
    figures.seconds.toFixed(1),
    figures.behind === 0 && figures.flushed === size ? 'passed' : 'nodes left behind',
  ];
}

/**
 * A rollout of every behind node, `--waves 1,100% --wave-timeout 24h`, whose first wave's host
 * never answers: the flow waits for it a whole day, then the wave fails and the rollout halts.
 * The clock is real time plus every Wait the flow skipped, so claiming takes its real time.
 */
async function rolloutRow(config: MeshConfig, size: number, beforeLoops: Row): Promise<Row> {
  // enrolled hosts (a host never enrolled is skipped, never waited on), none of which answers
  await seeded(config, size, (node) => [{ ...enrolmentItemKey(node), enrolledAt: new Date().toISOString() }]);
  let skippedMs = 0;
  const now = () => new Date(Date.now() + skippedMs);
  const client = enforcingQuotas(makeDynamoDBClient(config, { requestTimeoutMs: 30_000 }));
  const parts = localPartsFor(config, { clients: { dynamodb: client }, overrides: { now } });
  const started = performance.now();
  const rollout = await parts.rollouts.start({
    origin: { kind: 'behind' },
    options: rolloutOptions({ waves: '1,100%', waveTimeout: '24h' }),
    by: localActor(),
  });
  let largest = 0;
  const advanceMs: number[] = [];
  const advance = rolloutAdvanceHandler(parts);
  const { executions, simulated } = await runSteppingFlow(steppingFlows.rollout.aslPath, 24, 10, {
    id: rollout.id,
    advance: async (given) => {
      const at = performance.now();
      const answer = await invocation('rollout-advance', () => advance(given), { payload: given });
      advanceMs.push(performance.now() - at);
      if (!answer.finished) skippedMs += answer.waitSeconds * 1000;
      return answer;
    },
    measured: (bytes) => {
      largest = Math.max(largest, bytes);
    },
  });
  const record = await parts.rollouts.read(rollout.id);
  client.destroy();
  const events = executions.map((execution) => execution.events);
  const hours = simulated / 3_600;
  const perHour = events.reduce((sum, n) => sum + n, 0) / hours;
  const most = Math.max(...events);
  return [
    'rollout, 24 h',
    size,
    `history ≤ ${awsQuotas.historyEvents} events an execution; state ≤ ${kib(awsQuotas.stateBytes)}`,
    `one execution, ${beforeLoops[3]} events an hour: ${beforeLoops[4]}`,
    `${hours.toFixed(1)} h simulated, ${executions.length} executions, most ${most} events (${Math.round(perHour)} an hour); largest Advance I/O ${largest} B; Advance median ${median(advanceMs).toFixed(0)} ms; ended ${record.state}`,
    s(performance.now() - started),
    // the first wave's 24 h end (the flow's last Wait is shorter) halts it, as its silent host should
    most <= awsQuotas.historyEvents && hours >= 23.9 && record.state === 'halted' ? 'passed' : 'FAILED',
  ];
}

async function fanOutRow(config: MeshConfig, size: number): Promise<Row> {
  const figures = await fanOut(config, size);
  return [
    'upgrade fan-out',
    size,
    'consumer 30 s; visibility 180 s; hold bound 120 s',
    `one pass in one invocation (Sandbox.Timedout past ${Math.floor((30_000 * size) / figures.totalMs)} carriers at this rate); each follow-up re-read all: ${figures.passes * size} carriers read`,
    `${figures.passes} passes, longest ${s(figures.longestPassMs)} s (each ≤ ${s(figures.budgetMs)} s and a round); ${figures.itemsRead} carriers read; ${figures.held} held`,
    s(figures.totalMs),
    figures.longestPassMs < 30_000 ? 'passed' : 'FAILED',
  ];
}

async function fileRow(config: MeshConfig, size: number, _before: Row, notes: string[]): Promise<Row> {
  const requests: Row[] = [];
  const figures = await applyFleetFile(config, size, requests, notes, (text) => say(text));
  return [
    'mesh file applied',
    size,
    'Lambda 6 MB sync payload; API Gateway 10 MB, 29 s; mesh-apply-advance 300 s',
    `sent whole: ${mb(figures.wholeEventBytes)} event (${figures.wholeEventBytes > awsQuotas.syncPayloadBytes ? 'refused' : 'fits'}); each part read the whole mesh`,
    `${mb(figures.fileBytes)} file in ${figures.requests} requests (largest event ${mb(figures.largestEventBytes)}); ${figures.jobParts} job parts, at most ${figures.mostReadInAPart} items read in one; ${figures.conflicts} TransactionConflict answers, ${figures.flowRetries} Advance retried by the flow`,
    figures.seconds.toFixed(1),
    'passed',
  ];
}

/**
 * `size` behind nodes with 63-character names, each carrying one module, as `mesh apply` leaves
 * them, and for each node what `more` adds.
 */
async function seeded(
  config: MeshConfig,
  size: number,
  more: (node: string) => Item[] = () => [],
): Promise<void> {
  const setup = makeDynamoDBClient(config, { requestTimeoutMs: 30_000 });
  const started = performance.now();
  const items = behindItems(size);
  const node = nodeItemKey('').sk;
  for (const item of [...items]) if (item.sk === node) items.push(...more(String(item.node)));
  await seed(documentClient(setup), config.inventoryTable, items);
  setup.destroy();
  say(`seeded ${size} behind nodes in ${s(performance.now() - started)} s`);
}
