import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../lib/clients/common/exit-codes.ts';
import { applyJobDriverService } from '../../lib/local/apply-job-driver.ts';
import { type RunningApi, startLocalApi } from '../../lib/local/http-server.ts';
import { type LocalParts, localPartsFor } from '../../lib/local/parts.ts';
import type { ApplyJob } from '../../lib/server/core/mesh-file/apply-job.ts';
import { runMesh } from '../support/processes.ts';
import { StoppableStore } from '../support/stoppable-store.ts';

/**
 * Issue 36, findings 5 and 6: a store outage in the middle of a large apply. The run saw the CLI
 * told "try again" (exit 6) with 350 nodes of 2,000 written and no job recorded, and a job whose
 * part died report fewer nodes than it wrote. Here the store (a DynamoDB Local of the test's own)
 * is really stopped before the request’s sixth bulk transaction: the request's answer names the
 * job and what it wrote, the CLI follows it through the outage, the store comes back, the local
 * apply flow finishes the job, and the job counts every node written, by every part.
 */
const nodes = 300;

function webs(count: number): string {
  const lines = ['version: 1', 'nodes:', '  broker-1:', '    modules:', '      rabbit: {provides: amqp}'];
  for (let i = 0; i < count; i++)
    lines.push(
      `  web-${String(i).padStart(4, '0')}:`,
      '    modules:',
      '      base: {}',
      '      nginx: {consumes: [broker-1/rabbit]}',
    );
  return `${lines.join('\n')}\n`;
}

let store: StoppableStore;
let client: DynamoDBClient;
let parts: LocalParts;
let api: RunningApi;
const folder = mkdtempSync(join(tmpdir(), 'mesh-apply-outage-'));
/** Armed: the bulk transaction to stop the store before (the apply's, of 20 items or more). */
const outage = { before: 0, seen: 0, stopped: false };

beforeAll(async () => {
  store = await StoppableStore.start('applyoutage');
  const tables = await store.tables('outage');
  client = tables.client;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const items = (args.input as { TransactItems?: unknown[] }).TransactItems?.length ?? 0;
      if (context.commandName === 'TransactWriteItemsCommand' && items >= 20 && outage.before > 0) {
        outage.seen += 1;
        if (outage.seen === outage.before && !outage.stopped) {
          outage.stopped = true;
          await store.stop();
        }
      }
      return next(args);
    },
    { step: 'initialize', name: 'storeOutage' },
  );
  parts = localPartsFor(tables.config, { clients: { dynamodb: client } });
  api = await startLocalApi({ port: 0, parts, requestTimeoutMs: 12_000 });
}, 120_000);

afterAll(async () => {
  await api?.stop();
  client?.destroy();
  await store?.remove();
  rmSync(folder, { recursive: true, force: true });
});

describe('a store outage in the middle of an apply request', () => {
  it('answers the job that wrote part of it; the CLI follows it through the outage; the job counts every node', async () => {
    const driver = await applyJobDriverService.start(parts);
    try {
      const path = join(folder, 'webs.yaml');
      writeFileSync(path, webs(nodes));
      outage.before = 6;
      const applying = runMesh(api.url, ['apply', '-f', path]);
      // the outage lasts a few of the CLI's reads of the job, then the store is back
      await until(() => outage.stopped, 60_000);
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      await store.restart();
      const applied = await applying;

      expect(applied.code, applied.output).toBe(ExitCode.ok);
      // apply.interrupted, then apply.job-unread while the store is away
      expect(applied.output).toMatch(
        /the request wrote part of the apply \(\d+ nodes\) before its store could not be asked/,
      );
      expect(applied.output).toMatch(/apply job \S+ cannot be read now/);
      const id = /apply job (\S+) goes on with the rest/.exec(applied.output)?.[1] as string;
      const job = (await parts.applyJobs.read(id)) as ApplyJob;
      // every node of the file written, each counted once, whichever part wrote it
      expect(job).toMatchObject({ state: 'done', progress: { touched: nodes + 1 } });
      expect(applied.stdout).toContain(`wrote ${nodes + 1} nodes`);
      const graph = await parts.meshView.graph();
      expect(graph.nodes).toHaveLength(nodes + 1);
      // the parts the job recorded wrote less than all: the request's own part never was recorded
      expect(job.parts).toBeGreaterThanOrEqual(1);
    } finally {
      await driver.stop();
    }
  }, 180_000);
});

async function until(check: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
