import { LocalPushFlow } from '../lib/local/local-push-flow.ts';
import { localPartsFor } from '../lib/local/parts.ts';
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
import { RecordedPushFlow } from '../lib/server/core/push/records.ts';
import type { PushTaskFunctions } from '../lib/server/core/push/steps.ts';
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
function behindItems(size: number): Item[] {
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

/** The tasks, each measuring the JSON it takes and gives; Begin counts the executions. */
function measuredTasks(tasks: PushTaskFunctions) {
  const figures = { largest: 0, executions: 0 };
  const size = (value: unknown) => Buffer.byteLength(JSON.stringify(value));
  const measure =
    <T>(task: (input: unknown) => Promise<T>, starts = false) =>
    async (input: unknown): Promise<T> => {
      if (starts) figures.executions += 1;
      const output = await task(input);
      figures.largest = Math.max(figures.largest, size(input), size(output));
      return output;
    };
  return {
    figures,
    tasks: {
      Begin: measure(tasks.Begin, true),
      FindBehind: measure(tasks.FindBehind),
      Send: measure(tasks.Send),
      work: tasks.work,
    },
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
      // A machine shared with other work answers DynamoDB Local slowly: the bench measures the
      // push's design, so a slow answer is waited for rather than retried as a store away.
      const client = makeDynamoDBClient(config, { requestTimeoutMs: 30_000 });
      const parts = localPartsFor(config, { clients: { dynamodb: client } });
      const { figures, tasks } = measuredTasks(parts.pushTasks);
      const flow = new RecordedPushFlow({
        flow: new LocalPushFlow({ tasks }),
        records: parts.pushRecords,
        log: parts.log,
        now: parts.now,
      });
      const started = performance.now();
      const outcome = await flow.push({ behind: true });
      const seconds = (performance.now() - started) / 1000;
      const oldState = Buffer.byteLength(JSON.stringify(outcome.flushed));
      process.stderr.write(
        `bench push-state: ${size} pushed in ${seconds.toFixed(1)} s, ${figures.executions} executions, largest ${figures.largest} B, flushed ${outcome.flushed.length}, behind ${outcome.behind.length}\n`,
      );
      rows.push([
        size,
        outcome.flushed.length,
        outcome.behind.length,
        (figures.largest / kib).toFixed(1),
        `≥ ${(oldState / kib).toFixed(0)}`,
        figures.executions,
        seconds.toFixed(1),
        ((seconds * 1000) / size).toFixed(2),
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
        'push s',
        'ms/node',
      ],
      rows,
      notes: [
        'AWS refuses a state, execution input or Task input/output over 256 KiB (States.DataLimitExceeded).',
        'largest: measured on every Task input and output and the execution input (the Map passes its input on).',
        'old flow state: the flushed list the flow before the push’s work carried whole in its state (a lower bound).',
        'executions: an execution pauses between pages after 4 minutes (Express stops one at 5) and the next goes on.',
        'DynamoDB requests wait up to 30 s here (3 s in the runtime): the time depends on the machine’s load.',
      ],
    },
  ];
}
