import { describe, expect, it } from 'vitest';
import { LocalApplyFlow } from '../../../lib/adapters/stepfunctions/local-apply-flow.ts';
import { localActor } from '../../../lib/core/audit/record.ts';
import {
  type ApplyJob,
  ApplyJobRunningError,
  applyJobStaleMs,
  failedJob,
  isStale,
  progressedJob,
  startedJob,
} from '../../../lib/core/mesh-file/apply-job.ts';
import { advanceApplyJob, applyOrStartJob, jobErrorOf } from '../../../lib/core/mesh-file/apply-jobs.ts';
import type { LiveMesh } from '../../../lib/core/mesh-file/index.ts';
import { MassRemovalError, StalePlanError } from '../../../lib/core/mesh-file/index.ts';
import type { planCountsOf } from '../../../lib/core/mesh-file/pages.ts';
import type { LiveMeshReader, MeshFileWriter } from '../../../lib/core/mesh-file/ports.ts';
import {
  type ApplyOutcome,
  type FactRemovals,
  MeshFileService,
} from '../../../lib/core/mesh-file/service.ts';
import type { Log } from '../../../lib/core/ports.ts';
import { StoreUnavailableError } from '../../../lib/core/unavailable.ts';
import { MemoryApplyJobs } from '../../support/memory-apply-jobs.ts';

const file = 'version: 1\nnodes:\n  web-1: {}\n  web-2: {}\n  web-3: {}\n';
const quiet: Log = { info: () => {}, warn: () => {}, error: () => {} };
const at = new Date('2026-12-02T10:00:00.000Z');

/**
 * A service over an empty mesh in memory whose writer writes one node a call and says it is not
 * done until it has written all three: every part of an apply is one node.
 */
const empty: LiveMesh = { revision: 'r0', nodes: [] };

function oneNodeAPart(read: LiveMeshReader['read'] = async () => ({ mesh: empty, modules: new Map() })) {
  let written = 0;
  const writer: MeshFileWriter = {
    write: async (plan) => {
      written += 1;
      const node = plan.add.nodes[written - 1]?.node ?? 'web-?';
      return { transactions: 1, items: 10, touched: [node], complete: written >= plan.add.nodes.length };
    },
  };
  const refuse = async () => {
    throw new Error('nothing is removed here');
  };
  const removals: FactRemovals = { unconsume: refuse, unassign: refuse, removeNode: refuse };
  return new MeshFileService({ reader: { read }, writer, removals });
}

const outcome = (complete: boolean, items: number, touched: string[]): ApplyOutcome => ({
  plan: { revision: 'r1', digest: 'd1' } as ApplyOutcome['plan'],
  complete,
  removed: { relations: 1, modules: 0, nodes: 0 },
  written: { transactions: 1, items },
  progress: {
    touched: touched.length,
    touchedNodes: touched,
    remaining: complete ? 0 : 5,
    remainingNodes: complete ? [] : ['web-9'],
  },
});

function aJob(): ApplyJob {
  const first = outcome(false, 10, ['web-1']);
  return startedJob(
    'J',
    { prune: true, by: localActor() },
    { ...first, planCounts: { 'add.nodes': 6 } as ReturnType<typeof planCountsOf> },
    at,
  );
}

describe('an apply job’s record', () => {
  it('starts at the request’s part, adds each part’s counts, keeps the last part’s names, and ends done', () => {
    const job = aJob();
    expect(job).toMatchObject({ state: 'running', parts: 1, prune: true, allowMassRemoval: false });
    const later = new Date(at.getTime() + 5_000);
    const second = progressedJob(job, outcome(false, 20, ['web-2', 'web-3']), later);
    expect(second).toMatchObject({
      state: 'running',
      parts: 2,
      written: { transactions: 2, items: 30 },
      removed: { relations: 2, modules: 0, nodes: 0 },
      progress: { touched: 3, touchedNodes: ['web-2', 'web-3'], remaining: 5 },
      startedAt: at.toISOString(),
      updatedAt: later.toISOString(),
    });
    const done = progressedJob(second, outcome(true, 5, ['web-9']), later);
    expect(done).toMatchObject({ state: 'done', parts: 3, progress: { touched: 4, remaining: 0 } });
    const failed = failedJob(second, { status: 409, code: 'mass_removal', message: 'too many' }, later);
    expect(failed).toMatchObject({ state: 'failed', parts: 2, error: { code: 'mass_removal' } });
  });

  it('is stale once no part was recorded for the bound', () => {
    const running = { id: 'J', heardAt: at.toISOString() };
    expect(isStale(running, new Date(at.getTime() + applyJobStaleMs))).toBe(false);
    expect(isStale(running, new Date(at.getTime() + applyJobStaleMs + 1))).toBe(true);
  });

  it('says a refusal by its answer’s status, code and message, and a defect as internal, its text kept back', () => {
    const removal = { nodes: { removed: 5, of: 10 }, relations: { removed: 0, of: 0 }, message: 'half' };
    expect(jobErrorOf(new MassRemovalError(removal as never))).toMatchObject({
      status: 409,
      code: 'mass_removal',
    });
    expect(jobErrorOf(new StalePlanError('a', 'b'))).toMatchObject({ status: 409, code: 'stale_plan' });
    expect(jobErrorOf(new Error('secret at /var/task/x.js'))).toEqual({
      status: 500,
      code: 'internal',
      message: 'the apply failed unexpectedly; the control plane logged why',
    });
  });
});

describe('applyOrStartJob and advanceApplyJob', () => {
  it('answer a request that completes as today, with no job', async () => {
    const applyJobs = new MemoryApplyJobs();
    const meshFiles = oneNodeAPart();
    const single = 'version: 1\nnodes:\n  web-1: {}\n';
    const { outcome: done, job } = await applyOrStartJob(
      { meshFiles, applyJobs, applyFlow: new LocalApplyFlow(), now: () => at },
      { file: single, by: localActor() },
    );
    expect(done.complete).toBe(true);
    expect(job).toBeUndefined();
    expect(applyJobs.jobs.size).toBe(0);
  });

  it('start a job for the rest, tell the flow, refuse a second while it runs, and advance it part by part to done', async () => {
    const applyJobs = new MemoryApplyJobs();
    const applyFlow = new LocalApplyFlow();
    const told: string[] = [];
    applyFlow.listen((id) => told.push(id));
    const meshFiles = oneNodeAPart();
    const deps = { meshFiles, applyJobs, applyFlow, now: () => at };
    const { outcome: first, job } = await applyOrStartJob(deps, { file, by: localActor() });
    expect(first.complete).toBe(false);
    expect(told).toEqual([job?.id]);
    const id = job?.id as string;
    expect(applyJobs.holder?.id).toBe(id);

    await expect(applyOrStartJob(deps, { file, by: localActor() })).rejects.toThrow(ApplyJobRunningError);

    const advance = { ...deps, log: quiet };
    expect(await advanceApplyJob(advance, { id }, 60_000)).toEqual({ id, finished: false, waitSeconds: 0 });
    expect(await advanceApplyJob(advance, { id }, 60_000)).toEqual({ id, finished: true, waitSeconds: 0 });
    const done = applyJobs.jobs.get(id)?.job;
    expect(done).toMatchObject({ state: 'done', parts: 3, written: { items: 30, transactions: 3 } });
    expect(applyJobs.holder).toBeUndefined();
    // taken again after the end: nothing more
    expect(await advanceApplyJob(advance, { id }, 60_000)).toEqual({ id, finished: true, waitSeconds: 0 });
  });

  it('take a stale job’s place, ending it failed', async () => {
    const applyJobs = new MemoryApplyJobs();
    const deps = { meshFiles: oneNodeAPart(), applyJobs, applyFlow: new LocalApplyFlow(), now: () => at };
    const { job } = await applyOrStartJob(deps, { file, by: localActor() });
    const later = new Date(at.getTime() + applyJobStaleMs + 1_000);
    const { job: next } = await applyOrStartJob(
      { ...deps, meshFiles: oneNodeAPart(), now: () => later },
      { file, by: localActor() },
    );
    expect(next?.id).not.toBe(job?.id);
    expect(applyJobs.jobs.get(job?.id as string)?.job).toMatchObject({
      state: 'failed',
      error: { code: 'apply_job_abandoned' },
    });
  });

  it('throw the store away for the flow to retry, leaving the record as it was', async () => {
    const applyJobs = new MemoryApplyJobs();
    let away = false;
    const meshFiles = oneNodeAPart(async () => {
      if (away) throw new StoreUnavailableError('reading the inventory table');
      return { mesh: empty, modules: new Map() };
    });
    const deps = { meshFiles, applyJobs, applyFlow: new LocalApplyFlow(), now: () => at };
    const { job } = await applyOrStartJob(deps, { file, by: localActor() });
    const id = job?.id as string;
    away = true;
    await expect(advanceApplyJob({ ...deps, log: quiet }, { id }, 60_000)).rejects.toThrow(
      StoreUnavailableError,
    );
    expect(applyJobs.jobs.get(id)?.job).toMatchObject({ state: 'running', parts: 1 });
  });

  it('end a job failed with the code of a part the mesh refuses, and as internal for a defect', async () => {
    for (const [thrown, code] of [
      [new StalePlanError('r1', 'r2'), 'stale_plan'],
      [new TypeError('x is undefined'), 'internal'],
    ] as const) {
      const applyJobs = new MemoryApplyJobs();
      let refuse = false;
      const meshFiles = oneNodeAPart(async () => {
        if (refuse) throw thrown;
        return { mesh: empty, modules: new Map() };
      });
      const deps = { meshFiles, applyJobs, applyFlow: new LocalApplyFlow(), now: () => at };
      const { job } = await applyOrStartJob(deps, { file, by: localActor() });
      const id = job?.id as string;
      refuse = true;
      expect(await advanceApplyJob({ ...deps, log: quiet }, { id }, 60_000)).toMatchObject({
        finished: true,
      });
      const failed = applyJobs.jobs.get(id)?.job;
      expect(failed?.state).toBe('failed');
      expect(failed?.error?.code).toBe(code);
      expect(failed?.error?.message).not.toContain('x is undefined');
      expect(applyJobs.holder).toBeUndefined();
    }
  });
});
