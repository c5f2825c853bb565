import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../lib/clients/common/exit-codes.ts';
import { applyJobDriverService } from '../../lib/local/apply-job-driver.ts';
import { asFunction } from '../../lib/local/call-record.ts';
import { type RunningApi, startLocalApi } from '../../lib/local/http-server.ts';
import { localLambdaContext } from '../../lib/local/lambda-context.ts';
import { type LocalParts, localPartsFor } from '../../lib/local/parts.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import { meshApplyAdvanceHandler } from '../../lib/server/api/handlers/mesh-file.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import type { EventSink, MeshEvent } from '../../lib/server/core/events/events.ts';
import type { ApplyJob } from '../../lib/server/core/mesh-file/apply-job.ts';
import { codedLinesIn, runMesh } from '../support/processes.ts';
import { provisionTestResources } from '../support/resources.ts';

/**
 * `mesh apply` as a job (docs/mesh-file.md, "An apply as a job"): an apply that outlives its
 * request goes on in the apply flow (the local runtime's driver) with no further request, its
 * record readable by anyone; a part the mesh refuses ends it `failed` with its code; one runs at
 * a time. The requests are made short (a 3 s context: a part of 1 s) and every bulk transaction
 * a little slow, so a few hundred nodes outlive one request on any machine.
 */
const slowTransactionMs = 150;

/** A broker and `count` webs consuming it, each with two modules: a dozen items a node. */
function webs(count: number, from = 0): string {
  const lines = ['version: 1', 'nodes:', '  broker-1:', '    modules:', '      rabbit: {provides: amqp}'];
  for (let i = from; i < from + count; i++)
    lines.push(
      `  web-${String(i).padStart(4, '0')}:`,
      '    labels: {role: web}',
      '    modules:',
      '      base: {}',
      '      nginx: {consumes: [broker-1/rabbit]}',
    );
  return `${lines.join('\n')}\n`;
}

let api: RunningApi;
let parts: LocalParts;
let client: DynamoDBClient;
const folder = mkdtempSync(join(tmpdir(), 'mesh-apply-job-'));
const mesh = (args: string[]) => runMesh(api.url, args);
const file = (name: string, text: string) => {
  const path = join(folder, name);
  writeFileSync(path, text);
  return path;
};
const jobOf = async (id: string) => (await parts.applyJobs.read(id)) as ApplyJob;
/** The events the jobs told (docs/events.md): `apply.completed` or `apply.failed`, once each. */
const told: MeshEvent[] = [];
const events: EventSink = { publish: async (published) => void told.push(...published) };
const toldOf = (id: string) => told.filter((event) => event.detail.job === id).map((event) => event.type);

async function until<T>(
  what: string,
  check: () => Promise<T | undefined>,
  seen: () => Promise<unknown>,
  ms = 45_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}; last seen: ${JSON.stringify(await seen())}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

beforeAll(async () => {
  const config = await provisionTestResources('applyjob');
  client = makeDynamoDBClient(config);
  client.middlewareStack.add(
    (next, context) => async (args) => {
      // the apply's bulk transactions only, not the single facts a test adds by hand
      const items = (args.input as { TransactItems?: unknown[] }).TransactItems?.length ?? 0;
      if (context.commandName === 'TransactWriteItemsCommand' && items >= 20)
        await new Promise((resolve) => setTimeout(resolve, slowTransactionMs));
      return next(args);
    },
    { step: 'initialize', name: 'slowTransactions' },
  );
  parts = localPartsFor(config, { clients: { dynamodb: client }, overrides: { events } });
  api = await startLocalApi({ port: 0, parts, requestTimeoutMs: 3_000 });
});

afterAll(async () => {
  await api?.stop();
  client?.destroy();
  rmSync(folder, { recursive: true, force: true });
});

describe('an apply that outlives its request', () => {
  it('goes on as a job with no further request, until the mesh is the file; its record says how', async () => {
    const driver = await applyJobDriverService.start(parts);
    try {
      const path = file('webs.yaml', webs(400));
      const started = await mesh(['apply', '-f', path, '--no-wait', '--json']);
      expect(started.code, started.output).toBe(ExitCode.ok);
      const answer = JSON.parse(started.stdout) as { complete: boolean; job?: { id: string } };
      expect(answer.complete).toBe(false);
      const id = answer.job?.id as string;
      expect(id).toMatch(/^\d{8}T\d{9}Z-[0-9a-f]{6}$/);
      expect(codedLinesIn(started.output).map((line) => line.code)).toEqual(['apply.progress', 'apply.job']);

      // No CLI from here: the driver advances the job on its own.
      const done = await until(
        'the job to end',
        async () => {
          const job = await jobOf(id);
          return job.state === 'running' ? undefined : job;
        },
        async () => {
          const { state, parts: part, progress } = await jobOf(id);
          return { state, parts: part, remaining: progress.remaining };
        },
      );
      expect(done.state).toBe('done');
      expect(done.error).toBeUndefined();
      expect(done.parts).toBeGreaterThanOrEqual(2);
      expect(done.plan.counts['add.nodes']).toBe(401);
      expect(done.progress).toMatchObject({ touched: 401, remaining: 0, remainingNodes: [] });
      expect(done.written.items).toBeGreaterThan(401 * 3);
      expect(done.by.principal).toBe(localActor().principal);
      expect(await parts.applyJobs.running()).toBeUndefined();
      expect((await mesh(['diff', '-f', path])).code).toBe(0);
      expect(toldOf(id)).toEqual(['apply.completed']);

      // Anyone can read it, without its file; and follow it when it has ended already.
      const shown = await fetch(`${api.url}/mesh/apply-jobs/${id}`);
      expect(shown.status).toBe(200);
      const record = (await shown.json()) as Record<string, unknown>;
      expect(record).toMatchObject({ id, state: 'done', parts: done.parts });
      expect(record).not.toHaveProperty('file');
      expect(record).not.toHaveProperty('stored');
      const followed = await mesh(['apply', '--job', id]);
      expect(followed.code).toBe(ExitCode.ok);
      expect(followed.stdout).toContain(`apply job ${id} done`);
      expect(followed.stdout).toContain('added 401 nodes');

      // mesh apply follows the job it started, part by part, and ends with the whole outcome.
      const more = file('more.yaml', webs(700));
      const applied = await mesh(['apply', '-f', more]);
      expect(applied.code, applied.output).toBe(ExitCode.ok);
      expect(applied.output).toMatch(/applied part 1: \d+ nodes written so far/);
      expect(applied.output).toContain('goes on as apply job');
      expect(applied.stdout).toContain('added 300 nodes');
      expect(applied.stdout).toContain('wrote 300 nodes');
      expect((await mesh(['diff', '-f', more])).code).toBe(0);
    } finally {
      await driver.stop();
    }
  }, 180_000);

  it('takes a file or a job to follow, one of them, and no file option with a job (exit 2)', async () => {
    const path = file('one.yaml', webs(1));
    for (const args of [
      ['apply'],
      ['apply', '-f', path, '--job', '20260101T000000000Z-000000'],
      ['apply', '--job', '20260101T000000000Z-000000', '--prune'],
      ['apply', '--job', '20260101T000000000Z-000000', '--plan'],
    ]) {
      const refused = await mesh(args);
      expect(refused.code, args.join(' ')).toBe(ExitCode.usage);
      expect(refused.output).toMatch(/--file|--job/);
    }
    const unknown = await mesh(['apply', '--job', '20260101T000000000Z-000000']);
    expect(unknown.code).toBe(ExitCode.notFound);
  });

  it('answers 404 for a job it does not know, and 400 for what is not a job id', async () => {
    const unknown = await fetch(`${api.url}/mesh/apply-jobs/20260101T000000000Z-000000`);
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('apply_job_not_found');
    expect((await fetch(`${api.url}/mesh/apply-jobs/nope`)).status).toBe(400);
  });

  it('refuses a second long apply while one runs (409), and ends a job whose next part the mesh refuses', async () => {
    // No driver: the job waits for the advance this test takes by hand.
    const first = await fetch(`${api.url}/mesh/apply/prune`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ file: webs(1000), prune: true }),
    });
    expect(first.status).toBe(200);
    const answer = (await first.json()) as { complete: boolean; job?: { id: string } };
    expect(answer.complete).toBe(false);
    const id = answer.job?.id as string;
    expect((await jobOf(id)).state).toBe('running');

    const second = await mesh(['apply', '-f', file('other.yaml', webs(50, 2000)), '--json']);
    expect(second.code).toBe(ExitCode.refused);
    const refusal = JSON.parse(second.stdout) as { error: { code: string; message: string } };
    expect(refusal.error.code).toBe('apply_job_running');
    expect(refusal.error.message).toContain(id);
    expect(await parts.meshView.details('web-2000')).toBeUndefined();

    // Nodes the file does not hold, added meanwhile: the next part's prune would remove more than 10%.
    for (let i = 0; i < 200; i++) await parts.meshService.addNode(`stray-${i}`, {}, localActor());
    const advance = meshApplyAdvanceHandler(parts);
    const step = await asFunction('mesh-apply-advance', () =>
      advance({ id }, localLambdaContext('mesh-apply-advance', 60_000)),
    );
    expect(step).toEqual({ id, finished: true, waitSeconds: 0 });
    const failed = await jobOf(id);
    expect(failed.state).toBe('failed');
    expect(failed.error).toMatchObject({ status: 409, code: 'mass_removal' });
    expect(toldOf(id)).toEqual(['apply.failed']);
    expect(told.find((event) => event.detail.job === id)?.detail).toMatchObject({
      code: 'mass_removal',
      prune: true,
    });
    expect(await parts.applyJobs.running()).toBeUndefined();
    expect(await parts.meshView.details('stray-0')).toBeDefined();

    const followed = await mesh(['apply', '--job', id, '--json']);
    expect(followed.code).toBe(ExitCode.refused);
    expect((JSON.parse(followed.stdout) as { error: { code: string } }).error.code).toBe('mass_removal');
  }, 180_000);
});
