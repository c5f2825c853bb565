import {
  type ApplyJob,
  ApplyJobRaceError,
  ApplyJobRunningError,
  type RunningApplyJob,
} from '../../lib/core/mesh-file/apply-job.ts';
import type { ApplyJobStore } from '../../lib/core/mesh-file/ports.ts';

/** ApplyJobStore in memory, with the conditions of lib/adapters/dynamodb/apply-jobs.ts. */
export class MemoryApplyJobs implements ApplyJobStore {
  readonly jobs = new Map<string, { job: ApplyJob; file: string }>();
  holder: RunningApplyJob | undefined;

  async running(): Promise<RunningApplyJob | undefined> {
    return this.holder;
  }

  async start(job: ApplyJob, file: string, takingOver?: RunningApplyJob): Promise<void> {
    const held = this.holder;
    if (held && (held.id !== takingOver?.id || held.heardAt !== takingOver.heardAt))
      throw new ApplyJobRunningError(held.id);
    if (takingOver) {
      const old = this.jobs.get(takingOver.id);
      if (old?.job.state === 'running')
        old.job = {
          ...old.job,
          state: 'failed',
          error: { status: 409, code: 'apply_job_abandoned', message: 'abandoned' },
        };
    }
    this.jobs.set(job.id, { job, file });
    this.holder = { id: job.id, heardAt: job.updatedAt };
  }

  async read(id: string): Promise<ApplyJob | undefined> {
    return this.jobs.get(id)?.job;
  }

  async load(id: string): Promise<{ job: ApplyJob; file: string } | undefined> {
    const kept = this.jobs.get(id);
    return kept ? { ...kept } : undefined;
  }

  async record(next: ApplyJob, seenParts: number): Promise<void> {
    const kept = this.jobs.get(next.id);
    if (kept?.job.state !== 'running' || kept.job.parts !== seenParts || this.holder?.id !== next.id)
      throw new ApplyJobRaceError(next.id);
    kept.job = next;
    this.holder = next.state === 'running' ? { id: next.id, heardAt: next.updatedAt } : undefined;
  }
}
