import type { ApplyPlan } from './plan.ts';
import type { JobLedger } from './ports.ts';
import type { ApplyOutcome } from './service.ts';

/**
 * How an apply's writes are counted under a job. `ledger`: the job's, known already (a part of
 * an apply job). `opening`: called once the plan is known to write, before its first write, to
 * open the job its writes are counted under (the request's part: a request whose writes fail
 * midway is then a job, never a write hidden behind an error).
 */
export type ApplyHooks = {
  readonly ledger?: JobLedger;
  readonly opening?: (plan: ApplyPlan) => Promise<JobLedger>;
};

/**
 * An apply that failed after its job was opened: what it had written is counted in the job's
 * ledger, and `outcome` says what this call wrote before `cause` (the store away, a condition
 * that no longer held). The edge that answers it names the job (lib/server/api/handlers/mesh-file.ts).
 */
export class PartlyAppliedError extends Error {
  override name = 'PartlyAppliedError';
  readonly job: string;
  readonly outcome: ApplyOutcome;
  constructor(job: string, outcome: ApplyOutcome, cause: unknown) {
    super(`apply job ${job} failed after writing part of the apply: ${(cause as Error)?.message}`, { cause });
    this.job = job;
    this.outcome = outcome;
  }

  /** What the answer adds to its cause's: the job, what this request wrote, and what finishes the apply. */
  get written(): string {
    const job = this.job;
    return `apply job ${job} wrote part of the apply before this (${this.outcome.progress.touched} nodes by this request; mesh apply --job ${job} shows what it wrote), and nothing more is written: mesh apply -f FILE applies the rest`;
  }
}
