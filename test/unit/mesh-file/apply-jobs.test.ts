import { describe, expect, it } from 'vitest';
import { LocalApplyFlow } from '../../../lib/local/local-apply-flow.ts';
import { problemsFrom } from '../../../lib/server/api/problem.ts';
import { localActor } from '../../../lib/server/core/audit/record.ts';
import {
  type ApplyJob,
  ApplyJobRunningError,
  applyJobStaleMs,
  failedJob,
  isStale,
  openedJob,
  progressedJob,
} from '../../../lib/server/core/mesh-file/apply-job.ts';
import {
  advanceApplyJob,
  applyOrStartJob,
  jobErrorOf,
  jobLedger,
  requestHoldMarginMs,
} from '../../../lib/server/core/mesh-file/apply-jobs.ts';
import { meshFileErrors } from '../../../lib/server/core/mesh-file/errors.ts';
import type { LiveMesh } from '../../../lib/server/core/mesh-file/index.ts';
import { MassRemovalError, StalePlanError } from '../../../lib/server/core/mesh-file/index.ts';
import type { LiveMeshReader, MeshFileWriter } from '../../../lib/server/core/mesh-file/ports.ts';
import {
  type ApplyOutcome,
  type FactRemovals,
  MeshFileService,
  PartlyAppliedError,
} from '../../../lib/server/core/mesh-file/service.ts';
import type { Log } from '../../../lib/server/core/ports.ts';
import { StoreUnavailableError } from '../../../lib/server/core/unavailable.ts';
import { MemoryApplyJobs } from '../../support/memory-apply-jobs.ts';

/** As the mesh file's routes answer. */
const meshFileProblem = problemsFrom(meshFileErrors);

const file = 'version: 1\nnodes:\n  web-1: {}\n  web-2: {}\n  web-3: {}\n';
const quiet: Log = { info: () => {}, warn: () => {}, error: () => {} };
const at = new Date('2026-12-02T10:00:00.000Z');

/**
 * A mesh in memory (the nodes written so far) and a service over it whose writer writes one node
 * a call, in one transaction of 10 items, each with its item in the job's ledger as the real
 * writer puts it (lib/server/adapters/mesh-file/mesh-file-writer.ts): every part of an apply is one node.
 * `faults.afterWrite` is thrown once a call has written (the store going away midway).
 */
function oneNodeAPart(
  applyJobs = new MemoryApplyJobs(),
  read?: LiveMeshReader['read'],
  faults: { afterWrite?: Error } = {},
) {
  const written: string[] = [];
  const mesh = (): LiveMesh => ({
    revision: `r${written.length}`,
    nodes: written.map((node) => ({ node, labels: {}, assignments: [], relations: [] })),
  });
  const writer: MeshFileWriter = {
    write: async (plan, _reading, options) => {
      const node = plan.add.nodes[0]?.node;
      if (node === undefined) return { transactions: 0, items: 0, touched: [], complete: true };
      written.push(node);
      if (options.job) applyJobs.ledgerOf(options.job).transactions.push({ nodes: [node], items: 10 });
      if (options.progress) {
        options.progress.transactions += 1;
        options.progress.items += 10;
        options.progress.touched.add(node);
      }
      if (faults.afterWrite) throw faults.afterWrite;
      return { transactions: 1, items: 10, touched: [node], complete: plan.add.nodes.length === 1 };
    },
  };
  const refuse = async () => {
    throw new Error('nothing is removed here');
  };
  const removals: FactRemovals = { unconsume: refuse, unassign: refuse, removeNode: refuse };
  const service = new MeshFileService({
    reader: { read: read ?? (async () => ({ mesh: mesh(), modules: new Map() })) },
    writer,
    removals,
  });
  return Object.assign(service, { written, mesh });
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
  const opened = openedJob(
    'J',
    { prune: true, by: localActor() },
    { revision: 'r1', digest: 'd1', counts: { 'add.nodes': 6 } },
    { remaining: 6, remainingNodes: ['web-1'] },
    at,
    new Date(at.getTime() + 60_000),
  );
  return progressedJob(opened, outcome(false, 10, ['web-1']), at);
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
  const later = (ms: number) => new Date(at.getTime() + ms);
  const held = applyJobStaleMs + requestHoldMarginMs;

  it('open a job before the first write of a request that completes, record it done, and name none', async () => {
    const applyJobs = new MemoryApplyJobs();
    const meshFiles = oneNodeAPart(applyJobs);
    const single = 'version: 1\nnodes:\n  web-1: {}\n';
    const { outcome: done, job } = await applyOrStartJob(
      { meshFiles, applyJobs, applyFlow: new LocalApplyFlow(), now: () => at },
      { file: single, by: localActor() },
    );
    expect(done?.complete).toBe(true);
    expect(job).toBeUndefined();
    expect([...applyJobs.jobs.values()].map(({ job: kept }) => kept)).toMatchObject([
      { state: 'done', parts: 1, written: { transactions: 1, items: 10 }, progress: { touched: 1 } },
    ]);
    expect(applyJobs.holder).toBeUndefined();
    // a file that writes nothing opens no job
    await applyOrStartJob(
      { meshFiles, applyJobs, applyFlow: new LocalApplyFlow(), now: () => at },
      { file: single, by: localActor() },
    );
    expect(applyJobs.jobs.size).toBe(1);
  });

  it('end a job no flow would advance failed with try_again, having written nothing, and throw', async () => {
    const applyJobs = new MemoryApplyJobs();
    const meshFiles = oneNodeAPart(applyJobs);
    const away = new StoreUnavailableError('StartExecution', new Error('throttled'));
    const applyFlow = { started: async () => Promise.reject(away) };
    await expect(
      applyOrStartJob({ meshFiles, applyJobs, applyFlow, now: () => at }, { file, by: localActor() }),
    ).rejects.toBe(away);
    expect([...applyJobs.jobs.values()].map(({ job }) => job)).toMatchObject([
      { state: 'failed', parts: 0, written: { transactions: 0 }, error: { status: 503, code: 'try_again' } },
    ]);
  });

  it('start a job for the rest, tell the flow, refuse a second while it runs, and advance it part by part to done', async () => {
    const applyJobs = new MemoryApplyJobs();
    const applyFlow = new LocalApplyFlow();
    const told: string[] = [];
    applyFlow.listen((id) => told.push(id));
    const meshFiles = oneNodeAPart(applyJobs);
    const deps = { meshFiles, applyJobs, applyFlow, now: () => at };
    const { outcome: first, job } = await applyOrStartJob(deps, { file, by: localActor() });
    expect(first?.complete).toBe(false);
    expect(told).toEqual([job?.id]);
    const id = job?.id as string;
    expect(applyJobs.holder?.id).toBe(id);
    expect(applyJobs.jobs.get(id)?.job).toMatchObject({ parts: 1, progress: { touched: 1 } });
    expect(applyJobs.jobs.get(id)?.job.heldUntil).toBeUndefined();

    await expect(applyOrStartJob(deps, { file, by: localActor() })).rejects.toThrow(ApplyJobRunningError);

    const advance = { ...deps, log: quiet };
    expect(await advanceApplyJob(advance, { id }, 60_000)).toEqual({ id, finished: false, waitSeconds: 0 });
    expect(await advanceApplyJob(advance, { id }, 60_000)).toEqual({ id, finished: true, waitSeconds: 0 });
    const done = applyJobs.jobs.get(id)?.job;
    expect(done).toMatchObject({
      state: 'done',
      parts: 3,
      written: { items: 30, transactions: 3 },
      progress: { touched: 3 },
    });
    expect(applyJobs.holder).toBeUndefined();
    // taken again after the end: nothing more
    expect(await advanceApplyJob(advance, { id }, 60_000)).toEqual({ id, finished: true, waitSeconds: 0 });
  });

  it('answer a request whose store went away after it wrote with its job, which the flow finishes once the hold is over (issue 36, finding 5)', async () => {
    const applyJobs = new MemoryApplyJobs();
    const away = new StoreUnavailableError('writing the inventory table');
    const meshFiles = oneNodeAPart(applyJobs, undefined, { afterWrite: away });
    let now = at;
    const deps = { meshFiles, applyJobs, applyFlow: new LocalApplyFlow(), now: () => now };
    const answer = await applyOrStartJob(deps, { file, by: localActor(), until: at.getTime() + 20_000 });
    expect(meshFiles.written).toEqual(['web-1']);
    expect(answer).toMatchObject({
      outcome: { complete: false, progress: { touched: 1, touchedNodes: ['web-1'] } },
      interrupted: { code: 'try_again' },
    });
    const id = answer.job?.id as string;
    expect(applyJobs.jobs.get(id)?.job).toMatchObject({ state: 'running', parts: 0 });

    // the flow waits while the request's hold lasts, then writes the rest from the mesh as it is
    const healthy = oneNodeAPart(applyJobs);
    healthy.written.push(...meshFiles.written);
    const advance = { ...deps, meshFiles: healthy, log: quiet };
    expect(await advanceApplyJob(advance, { id }, 60_000)).toMatchObject({ finished: false });
    expect(healthy.written).toEqual(['web-1']);
    now = later(20_000 + requestHoldMarginMs + 1);
    for (let step = 0; step < 5 && !(await advanceApplyJob(advance, { id }, 60_000)).finished; step += 1);
    expect(healthy.written).toEqual(['web-1', 'web-2', 'web-3']);
    expect(applyJobs.jobs.get(id)?.job).toMatchObject({
      state: 'done',
      written: { transactions: 3, items: 30 },
      progress: { touched: 3 },
    });
  });

  it('count what a job wrote exactly, a part that died after writing included (issue 36, finding 6)', async () => {
    const applyJobs = new MemoryApplyJobs();
    const meshFiles = oneNodeAPart(applyJobs);
    const deps = { meshFiles, applyJobs, applyFlow: new LocalApplyFlow(), now: () => at };
    const { job } = await applyOrStartJob(deps, { file, by: localActor() });
    const id = job?.id as string;
    // a part that wrote web-2 and died before it recorded anything (its process killed)
    await meshFiles.apply(
      { file, by: localActor(), until: at.getTime() },
      { ledger: jobLedger(applyJobs, id) },
    );
    expect(applyJobs.jobs.get(id)?.job.parts).toBe(1);
    expect(await advanceApplyJob({ ...deps, log: quiet }, { id }, 60_000)).toMatchObject({ finished: true });
    expect(meshFiles.written).toEqual(['web-1', 'web-2', 'web-3']);
    // the parts recorded wrote web-1 and web-3; the ledger says all three
    expect(applyJobs.jobs.get(id)?.job).toMatchObject({
      state: 'done',
      parts: 2,
      written: { transactions: 3, items: 30 },
      progress: { touched: 3 },
    });
  });

  it('end the job failed, naming it, when the mesh refuses a request after it wrote', async () => {
    const applyJobs = new MemoryApplyJobs();
    const refusal = new StalePlanError('r1', 'r2');
    const meshFiles = oneNodeAPart(applyJobs, undefined, { afterWrite: refusal });
    const deps = { meshFiles, applyJobs, applyFlow: new LocalApplyFlow(), now: () => at };
    const thrown = await applyOrStartJob(deps, { file, by: localActor() }).catch((error: unknown) => error);
    expect(thrown).toBeInstanceOf(PartlyAppliedError);
    const { job, outcome: part } = thrown as PartlyAppliedError;
    expect((thrown as PartlyAppliedError).cause).toBe(refusal);
    expect(part.progress.touchedNodes).toEqual(['web-1']);
    expect(applyJobs.jobs.get(job)?.job).toMatchObject({
      state: 'failed',
      error: { code: 'stale_plan' },
      progress: { touched: 1 },
    });
    expect(applyJobs.holder).toBeUndefined();
    // answered as its cause is, naming the job and what finishes the apply
    const answered = meshFileProblem(thrown);
    expect(answered).toMatchObject({ status: 409, code: 'stale_plan', details: { job } });
    expect(answered?.message).toMatch(
      new RegExp(
        `; apply job ${job} wrote part of the apply before this \\(1 nodes by this request; .*mesh apply -f FILE applies the rest$`,
      ),
    );
    // a cause that is a defect is a 500 that still names the job
    const defect = new PartlyAppliedError(job, part, new TypeError('x is undefined'));
    expect(meshFileProblem(defect)).toMatchObject({ status: 500, code: 'internal', details: { job } });
    expect(meshFileProblem(defect)?.message).toMatch(
      /^the apply failed unexpectedly; .* apply job \S+ wrote part/,
    );
  });

  it('take a stale job’s place, ending it failed', async () => {
    const applyJobs = new MemoryApplyJobs();
    const deps = {
      meshFiles: oneNodeAPart(applyJobs),
      applyJobs,
      applyFlow: new LocalApplyFlow(),
      now: () => at,
    };
    const { job } = await applyOrStartJob(deps, { file, by: localActor() });
    const laterOn = later(applyJobStaleMs + 1_000);
    const { job: next } = await applyOrStartJob(
      { ...deps, meshFiles: oneNodeAPart(applyJobs), now: () => laterOn },
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
    const live = oneNodeAPart(applyJobs);
    const meshFiles = oneNodeAPart(applyJobs, async () => {
      if (away) throw new StoreUnavailableError('reading the inventory table');
      return { mesh: live.mesh(), modules: new Map() };
    });
    const deps = { meshFiles, applyJobs, applyFlow: new LocalApplyFlow(), now: () => at };
    const { job } = await applyOrStartJob(deps, { file, by: localActor() });
    const id = job?.id as string;
    away = true;
    await expect(advanceApplyJob({ ...deps, log: quiet }, { id }, 60_000)).rejects.toThrow(
      StoreUnavailableError,
    );
    expect(applyJobs.jobs.get(id)?.job).toMatchObject({ state: 'running', parts: 1 });
    expect(held).toBeGreaterThan(0);
  });

  it('end a job failed with the code of a part the mesh refuses, and as internal for a defect', async () => {
    for (const [thrown, code] of [
      [new StalePlanError('r1', 'r2'), 'stale_plan'],
      [new TypeError('x is undefined'), 'internal'],
    ] as const) {
      const applyJobs = new MemoryApplyJobs();
      let refuse = false;
      const meshFiles = oneNodeAPart(applyJobs, async () => {
        if (refuse) throw thrown;
        return { mesh: { revision: 'r0', nodes: [] }, modules: new Map() };
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
