import type { InProcessPushStarter } from '../lib/local/in-process-push-starter.ts';
import { localPartsFor } from '../lib/local/parts.ts';
import { enforcingQuotas } from '../lib/local/sdk-quotas.ts';
import { makeDynamoDBClient } from '../lib/server/adapters/aws-clients.ts';
import {
  assignmentItem,
  carrierItem,
  markedKey,
  markKey,
  moduleKey,
  nodeItem,
} from '../lib/server/adapters/dynamodb/mesh-items.ts';
import { documentClient, type Item } from '../lib/server/adapters/dynamodb/requests.ts';
import { localActor } from '../lib/server/core/audit/record.ts';
import type { MeshConfig } from '../lib/server/setup/config.ts';
import { seed } from './push.bench.ts';
import { benchEnvironment } from './support/environment.ts';
import type { BenchTable } from './support/table.ts';

/**
 * `npm run bench -- push-state`: a `push --behind` of N behind nodes with 63-character names on
 * DynamoDB Local, through the push's ASL on aws-local-stepfunctions (what `npm start` runs):
 * the largest state, execution input or Task input/output in bytes (Step Functions refuses any
 * over 256 KiB), the executions the push took (each under Express's 5 minutes), and its time.
 * Beside it, what the flow before the push's work carried: every flushed node in its state, at
 * least the bytes of the outcome's `flushed` list. MESH_BENCH_SIZES (default 50000,10000).
 */
const longName = (i: number) => `node-${String(i).padStart(6, '0')}-`.padEnd(63, 'x');
const kib = 1024;

/** N nodes never sent, each carrying one module and marked possibly behind, as `mesh apply` leaves them. */
export function behindItems(size: number): Item[] {
  const createdAt = '2026-01-01T00:00:00.000Z';
  const items: Item[] = [{ ...moduleKey('base'), module: 'base', version: '1.0' }];
  for (let i = 0; i < size; i += 1) {
    const node = longName(i);
    items.push(
      { ...nodeItem(node, createdAt), modules: 1, consumes: 0, consumers: 0 },
      assignmentItem(node, { module: 'base', version: '1.0', provides: null }),
      carrierItem('base', node, '1.0'),
      { ...markKey(node), marks: 1, node, markedAt: createdAt },
      { ...markedKey(node), node, markedAt: createdAt },
    );
  }
  return items;
}

export type PushBehindFigures = {
  readonly flushed: number;
  readonly behind: number;
  /** The largest state, Task input/output or execution input, in bytes, and where. */
  readonly largest: number;
  readonly largestState: string;
  /** The bytes of the flushed list the flow before the push's work carried whole (a lower bound). */
  readonly oldStateBytes: number;
  readonly executions: number;
  readonly invocations: number;
  readonly seconds: number;
};

/**
 * `mesh push --behind` as the API's handler starts it (Pushes.push, not waited for), run by the
 * local runtime's own parts: push-run invoked in this process within its timeout and handing
 * itself on, the push flow's ASL with every state measured against 256 KiB and each execution
 * held to Express's five minutes, every DynamoDB request holding the enforced quotas.
 */
export async function pushBehind(config: MeshConfig): Promise<PushBehindFigures> {
  // A machine shared with other work answers DynamoDB Local slowly: the bench measures the
  // push's design, so a slow answer is waited for rather than retried as a store away.
  const client = enforcingQuotas(makeDynamoDBClient(config, { requestTimeoutMs: 30_000 }));
  let largest = 0;
  let largestState = '';
  let executions = 0;
  const parts = localPartsFor(config, {
    clients: { dynamodb: client },
    flowMeasured: (state, bytes) => {
      if (state === '(execution)') executions += 1;
      if (bytes > largest) {
        largest = bytes;
        largestState = state;
      }
    },
  });
  const starter = parts.pushStarter as InProcessPushStarter;
  const started = performance.now();
  const push = await parts.pushes.push({ behind: true }, localActor(), 0);
  // the push runs on in push-run's invocations, each handing on to the next before its timeout
  while (starter.running.size > 0) await Promise.all([...starter.running]);
  const seconds = (performance.now() - started) / 1000;
  const record = await parts.pushRecords.read(push.id);
  client.destroy();
  if (record?.state !== 'done' || record.outcome === 'failed')
    throw new Error(
      `push ${push.id} did not finish: ${record?.error ?? record?.state}: ${record?.errorMessage ?? ''}`,
    );
  return {
    flushed: record.flushedCount,
    behind: record.behindCount,
    largest,
    largestState,
    oldStateBytes: record.flushedCount * Buffer.byteLength(`${JSON.stringify(longName(0))},`),
    executions,
    invocations: starter.invocations,
    seconds,
  };
}

export async function run(): Promise<BenchTable[]> {
  const sizes = (process.env.MESH_BENCH_SIZES ?? '50000,10000').split(',').map(Number);
  const environment = await benchEnvironment();
  const rows: Array<Array<string | number>> = [];
  try {
    for (const size of sizes) {
      const config = await environment.provision(`bench-pstate-${size}`);
      const setup = makeDynamoDBClient(config, { requestTimeoutMs: 30_000 });
      const seeded = performance.now();
      await seed(documentClient(setup), config.inventoryTable, behindItems(size));
      setup.destroy();
      process.stderr.write(
        `bench push-state: seeded ${size} behind nodes in ${((performance.now() - seeded) / 1000).toFixed(1)} s\n`,
      );
      const figures = await pushBehind(config);
      process.stderr.write(
        `bench push-state: ${size} pushed in ${figures.seconds.toFixed(1)} s, ${figures.executions} executions, ${figures.invocations} push-run invocations, largest ${figures.largest} B (${figures.largestState}), flushed ${figures.flushed}, behind ${figures.behind}\n`,
      );
      rows.push([
        size,
        figures.flushed,
        figures.behind,
        (figures.largest / kib).toFixed(1),
        `≥ ${(figures.oldStateBytes / kib).toFixed(0)}`,
        figures.executions,
        figures.invocations,
        figures.seconds.toFixed(1),
        ((figures.seconds * 1000) / size).toFixed(2),
      ]);
    }
  } finally {
    await environment.stop();
  }
  return [
    {
      title:
        'push --behind of N behind nodes with 63-character names (DynamoDB Local, aws-local-stepfunctions)',
      columns: [
        'behind nodes',
        'flushed',
        'still behind',
        'largest state/task I/O KiB',
        'old flow state KiB',
        'executions',
        'push-run invocations',
        'push s',
        'ms/node',
      ],
      rows,
      notes: [
        'AWS refuses a state, execution input or Task input/output over 256 KiB (States.DataLimitExceeded).',
        'largest: measured on every Task input and output and the execution input (the Map passes its input on).',
        'old flow state: the flushed list the flow before the push’s work carried whole in its state (a lower bound).',
        'executions: an execution pauses between pages after 4 minutes (Express stops one at 5) and the next goes on.',
        'push-run invocations: each held to push-run’s timeout (Sandbox.Timedout past it); a push hands itself on before.',
        'every DynamoDB request holds the quotas the local runtime enforces (TransactionConflict; MESH_PARTITION_THROUGHPUT=on adds 1,000 WCU / 3,000 RCU a partition).',
        'DynamoDB requests wait up to 30 s here (3 s in the runtime): the time depends on the machine’s load.',
      ],
    },
  ];
}
