import { randomBytes } from 'node:crypto';
import { type AttributeValue, paginateQuery } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { localPartsFor } from '../../lib/local/parts.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import {
  type ApplyJob,
  ApplyJobRaceError,
  ApplyJobRunningError,
  openedJob,
  progressedJob,
} from '../../lib/server/core/mesh-file/apply-job.ts';
import type { ApplyOutcome } from '../../lib/server/core/mesh-file/service.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
import { provisionTestResources } from '../support/resources.ts';

/** The apply jobs' items on DynamoDB Local (lib/server/adapters/mesh-file/apply-jobs.ts): the file in parts, the conditions. */
const part = (complete: boolean): ApplyOutcome => ({
  plan: { revision: 'r1', digest: 'd1' } as ApplyOutcome['plan'],
  complete,
  removed: { relations: 0, modules: 0, nodes: 0 },
  written: { transactions: 2, items: 150 },
  progress: { touched: 10, touchedNodes: ['web-1'], remaining: complete ? 0 : 5, remainingNodes: [] },
});
const jobAt = (id: string, at: Date): ApplyJob =>
  openedJob(
    id,
    { by: localActor() },
    { revision: 'r1', digest: 'd1', counts: { 'add.nodes': 15 } },
    { remaining: 15, remainingNodes: ['web-1'] },
    at,
    new Date(at.getTime() + 60_000),
  );

let config: MeshConfig;
let parts: Parts;
beforeAll(async () => {
  config = await provisionTestResources('applyjobs');
  parts = localPartsFor(config);
});

describe('apply jobs in the inventory table', () => {
  it('keep a file whose gzip is over one item in parts, and give it back whole, the record without it', async () => {
    // random text compresses little: over 1 MB gzipped, several parts of at most 300 KB
    const file = `# ${randomBytes(1_500_000).toString('base64')}\n`;
    const job = jobAt('20261202T100000000Z-aaaaaa', new Date());
    await parts.applyJobs.start(job, file);
    const loaded = await parts.applyJobs.load(job.id);
    expect(loaded?.file).toBe(file);
    expect(loaded?.job).toEqual(job);
    expect(await parts.applyJobs.read(job.id)).toEqual(job);
    expect(await parts.applyJobs.running()).toEqual({ id: job.id, heardAt: job.updatedAt });
    // the table's TTL takes the file after a day and the record after a push record's 90 days
    const Items: Array<Record<string, AttributeValue>> = [];
    const pages = paginateQuery(
      { client: makeDynamoDBClient(config) },
      {
        TableName: config.inventoryTable,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': { S: `mesh#apply-job#${job.id}` } },
        ConsistentRead: true,
      },
    );
    for await (const page of pages) Items.push(...(page.Items ?? []));
    const startedS = Math.floor(Date.parse(job.startedAt) / 1000);
    const daysOf = (sk: string) =>
      Items.filter((item) => item.sk?.S?.startsWith(sk)).map(
        (item) => (Number(item.expiresAt?.N) - startedS) / 86_400,
      );
    const fileDays = daysOf('file#');
    expect(fileDays.length).toBeGreaterThan(1);
    expect(new Set(fileDays)).toEqual(new Set([1]));
    expect(daysOf('record')).toEqual([90]);

    // one at a time: the next is refused with the running job's id, its file parts taken back
    const next = jobAt('20261202T100000001Z-bbbbbb', new Date());
    await expect(parts.applyJobs.start(next, 'version: 1\n')).rejects.toEqual(
      new ApplyJobRunningError(job.id),
    );
    expect(await parts.applyJobs.load(next.id)).toBeUndefined();

    // a part recorded at the parts read; a second advance that read the same is refused
    const second = progressedJob(job, part(false), new Date());
    await parts.applyJobs.record(second, job.parts);
    await expect(parts.applyJobs.record(second, job.parts)).rejects.toBeInstanceOf(ApplyJobRaceError);
    expect(await parts.applyJobs.running()).toEqual({ id: job.id, heardAt: second.updatedAt });
    const done = progressedJob(second, part(true), new Date());
    await parts.applyJobs.record(done, second.parts);
    expect((await parts.applyJobs.read(job.id))?.state).toBe('done');
    expect(await parts.applyJobs.running()).toBeUndefined();
  });

  it('let a new job take a stale one’s place only as it was seen, ending it failed', async () => {
    const old = jobAt('20261202T110000000Z-cccccc', new Date('2026-12-02T11:00:00Z'));
    await parts.applyJobs.start(old, 'version: 1\n');
    const seen = await parts.applyJobs.running();
    const other = jobAt('20261202T113000000Z-dddddd', new Date());
    await expect(
      parts.applyJobs.start(other, 'version: 1\n', { id: old.id, heardAt: 'another time' }),
    ).rejects.toBeInstanceOf(ApplyJobRunningError);
    await parts.applyJobs.start(other, 'version: 1\n', seen);
    expect(await parts.applyJobs.read(old.id)).toMatchObject({
      state: 'failed',
      error: { code: 'apply_job_abandoned' },
    });
    expect((await parts.applyJobs.running())?.id).toBe(other.id);
    // the old job's advance, if it wakes, cannot record over it
    await expect(
      parts.applyJobs.record(progressedJob(old, part(true), new Date()), old.parts),
    ).rejects.toBeInstanceOf(ApplyJobRaceError);
  });

  it('count a job’s ledger: each transaction once, each removal noted once, one taken back not at all', async () => {
    const job = jobAt('20261202T120000000Z-eeeeee', new Date());
    const writer = localPartsFor(config);
    await writer.meshService.addNode('ledger-old', {}, localActor());
    await parts.applyJobs.noteRemoval(job.id, { kind: 'node', node: 'ledger-old', modules: 2 });
    await parts.applyJobs.noteRemoval(job.id, { kind: 'node', node: 'ledger-old', modules: 2 });
    const refused = { kind: 'module' as const, node: 'ledger-x', module: 'm' };
    await parts.applyJobs.noteRemoval(job.id, refused);
    await parts.applyJobs.forgetRemoval(job.id, refused);
    expect(await parts.applyJobs.ledger(job.id)).toEqual({
      written: { transactions: 0, items: 0 },
      removed: { relations: 0, modules: 2, nodes: 1 },
      touched: 1,
    });
  });
});
