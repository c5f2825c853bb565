import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalParts, localPartsFor } from '../../lib/local/parts.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import {
  type ApplyJob,
  newApplyJobId,
  notPlanned,
  openedJob,
} from '../../lib/server/core/mesh-file/apply-job.ts';
import { advanceApplyJob } from '../../lib/server/core/mesh-file/apply-jobs.ts';
import type { Log } from '../../lib/server/core/ports.ts';
import { provisionTestResources } from '../support/resources.ts';

/**
 * An apply job keeps its plan in slices (docs/mesh-file.md, "An apply as a job"): a part after
 * the first reads its slice's nodes, never the whole mesh, so what it reads is the same on a mesh
 * four times as large; a slice taken again (a part that died) writes nothing twice; a node added
 * by hand between parts is met as a plan made then would meet it. Parts are made to carry one
 * slice each by a clock an hour behind, so their time is up after their first slice.
 */
const quiet: Log = { info: () => {}, warn: () => {}, error: () => {} };
const by = localActor();
const nodesPerSlice = 10;

/** `count` webs from `from`, each with two modules, consuming broker-1's rabbit. */
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

let parts: LocalParts;
let client: DynamoDBClient;
let itemsRead = 0;

beforeAll(async () => {
  const config = await provisionTestResources('slices');
  client = makeDynamoDBClient(config);
  client.middlewareStack.add(
    (next) => async (args) => {
      const result = await next(args);
      const output = result.output as {
        Count?: number;
        Item?: unknown;
        Responses?: Record<string, unknown[]>;
      };
      if (typeof output.Count === 'number') itemsRead += output.Count;
      else if (output.Item) itemsRead += 1;
      else if (output.Responses) for (const list of Object.values(output.Responses)) itemsRead += list.length;
      return result;
    },
    { step: 'initialize', name: 'itemsRead' },
  );
  parts = localPartsFor(config, { clients: { dynamodb: client } });
});

afterAll(() => client?.destroy());

/** A job of `file`, handed whole to the flow as an uploaded file's is. */
async function jobOf(file: string): Promise<string> {
  // opened before the parts' clock, so no request holds it
  const now = new Date(Date.now() - 2 * 3_600_000);
  const job = openedJob(
    newApplyJobId(now),
    { by },
    notPlanned,
    { remaining: 0, remainingNodes: [] },
    now,
    now,
  );
  await parts.applyJobs.start(job, file);
  return job.id;
}

const anHourBehind = () => new Date(Date.now() - 3_600_000);
const part = (id: string, now: () => Date = anHourBehind) =>
  advanceApplyJob({ ...parts, log: quiet, now, nodesPerSlice }, { id }, 60_000);
const read = async (id: string) => (await parts.applyJobs.read(id)) as ApplyJob;

/** Items read by one part: the first (planning) part's, then the second's. */
async function twoParts(file: string): Promise<{ id: string; first: number; second: number }> {
  const id = await jobOf(file);
  itemsRead = 0;
  await part(id);
  const first = itemsRead;
  itemsRead = 0;
  await part(id);
  return { id, first, second: itemsRead };
}

async function finish(id: string): Promise<ApplyJob> {
  for (let step = 0; step < 50; step += 1) if ((await part(id, () => new Date())).finished) return read(id);
  throw new Error(`job ${id} did not end: ${JSON.stringify(await read(id))}`);
}

describe('an apply job that keeps its plan', () => {
  it('reads what a part’s slice needs, not the mesh: the same at 4N nodes as at N', async () => {
    const n = 60;
    await parts.meshFiles.apply({ file: webs(n), by });
    const small = await twoParts(webs(n + 30));
    expect((await read(small.id)).stored?.slices.length).toBeGreaterThanOrEqual(3);
    expect((await finish(small.id)).state).toBe('done');

    await parts.meshFiles.apply({ file: webs(4 * n), by });
    const large = await twoParts(webs(4 * n + 30));
    expect((await finish(large.id)).state).toBe('done');

    // The planning part reads the whole mesh, so the meter sees the mesh grow ...
    expect(large.first).toBeGreaterThan(small.first + 2 * n);
    // ... and a slice's part does not: its nodes, its modules' records, the job's own items.
    expect(small.second).toBeGreaterThan(0);
    expect(Math.abs(large.second - small.second)).toBeLessThanOrEqual(5);
    expect(large.second).toBeLessThan(4 * n);
  }, 120_000);

  it('writes nothing twice when a slice is taken again, and meets a node added by hand between parts', async () => {
    const id = await jobOf(webs(30, 1000));
    await part(id);
    await part(id);
    const job = await read(id);
    const stored = job.stored as NonNullable<ApplyJob['stored']>;
    expect(stored.next).toBeGreaterThanOrEqual(1);
    // a part that wrote its slice and died before its record: the cursor as it was before it
    await parts.applyJobs.record({ ...job, stored: { ...stored, next: stored.next - 1 } }, job.parts);
    // a node of a later slice added by hand, with labels the file does not give it
    await parts.meshService.addNode('web-1029', { role: 'db', zone: 'a' }, by);

    const done = await finish(id);
    expect(done.state, JSON.stringify(done.error)).toBe('done');
    expect(done.progress.remaining).toBe(0);
    const { plan } = await parts.meshFiles.plan({ file: webs(30, 1000) });
    expect(plan.add).toEqual({ nodes: [], modules: [], relations: [] });
    expect(plan.labels).toEqual([]);
  }, 60_000);
});
