import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { cliLines } from '../lib/clients/cli/output-lines.ts';
import { startLocalApi } from '../lib/local/http-server.ts';
import { localPartsFor } from '../lib/local/parts.ts';
import { makeDynamoDBClient } from '../lib/server/adapters/aws-clients.ts';
import { documentClient } from '../lib/server/adapters/dynamodb/requests.ts';
import { localActor } from '../lib/server/core/audit/record.ts';
import type { PushOutcome } from '../lib/server/core/push/ports.ts';
import { codedLineReader, printedJson } from '../test/support/processes.ts';
import { seed, seedItems } from './push.bench.ts';
import { benchEnvironment } from './support/environment.ts';
import type { BenchTable } from './support/table.ts';

const root = join(import.meta.dirname, '..');

/** `mesh CMD… --json` against `api`: its exit code, its stdout, and how many rounds' progress it showed. */
function mesh(api: string, args: readonly string[]) {
  return new Promise<{ code: number | null; stdout: string; progress: number; ms: number }>((resolve) => {
    const started = performance.now();
    const child = spawn(process.execPath, [join(root, 'bin/mesh.ts'), '--api', api, '--json', ...args], {
      cwd: root,
    });
    let stdout = '';
    let progress = 0;
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    const read = codedLineReader((said) => {
      if (said.code === cliLines.progress.code && said.round !== null) progress += 1;
      process.stderr.write(`bench push-follow: mesh: ${said.message}\n`);
    });
    child.stderr.on('data', (chunk: Buffer) => read(chunk.toString()));
    child.on('close', (code) => resolve({ code, stdout, progress, ms: performance.now() - started }));
  });
}

/**
 * The push that outlasts any request: every node of a mesh of MESH_BENCH_SIZES (default 10,000)
 * changed at once (a module all of them carry moves to a new version), then `mesh push --behind
 * --full` through the CLI against the local API, which answers with the push's id after 20 s;
 * the CLI follows the push by its record to the end. The answer `mesh push` printed at the end
 * is checked: every node sent, none behind.
 */
export async function run(): Promise<BenchTable[]> {
  const sizes = (process.env.MESH_BENCH_SIZES ?? '10000').split(',').map(Number);
  const environment = await benchEnvironment();
  const rows: Array<Array<string | number>> = [];
  try {
    for (const size of sizes) {
      const config = await environment.provision(`bench-follow-${size}`);
      const setup = makeDynamoDBClient(config);
      await seed(documentClient(setup), config.inventoryTable, seedItems(size));
      setup.destroy();
      const parts = localPartsFor(config);
      const api = await startLocalApi({ port: 0, parts });
      try {
        const changed = performance.now();
        const { carriers } = await parts.moduleVersions.setModuleVersion('base', '2.0', localActor());
        const markMs = performance.now() - changed;
        // progress on stderr (one coded line each), the push's answer on stdout
        const pushed = await mesh(api.url, ['push', '--behind', '--full', '--max-rounds', '3']);
        const answer = printedJson(pushed.stdout) as PushOutcome | undefined;
        const flushed = answer?.behind.length === 0 ? (answer.flushedCount ?? answer.flushed.length) : 0;
        if (pushed.code !== 0 || flushed !== carriers.length)
          throw new Error(
            `the push did not send every node: exit ${pushed.code}, ${flushed} of ${carriers.length}\n${pushed.stdout.slice(-500)}`,
          );
        rows.push([
          size,
          carriers.length,
          Math.round(markMs),
          Math.round(pushed.ms),
          flushed,
          pushed.progress,
        ]);
      } finally {
        await api.stop();
      }
    }
  } finally {
    await environment.stop();
  }
  return [
    {
      title:
        'mesh push --behind --full after every node changed, followed by its record (local API, DynamoDB Local)',
      columns: ['nodes', 'changed', 'mark ms', 'push wall ms (CLI)', 'flushed', 'progress lines'],
      rows,
      notes: [
        'the API answers 202 with the push id after 20 s (MESH_PUSH_WAIT_SECONDS); the CLI follows GET /pushes/{push} every second',
        'flushed is the count the record keeps: its lists keep the first 1,000 nodes',
      ],
    },
  ];
}
