import type { ApplyJob } from '../../../server/core/mesh-file/apply-job.ts';
import type { BoundedApplyOutcome } from '../../../server/core/mesh-file/pages.ts';
import { type ApiClient, ApiProblemError, ApiUnreachableError } from '../../http/api-client.ts';
import type { Output } from '../output.ts';
import { cliLines } from '../output-lines.ts';

/** How often `mesh apply` reads a job's record while it runs: a part takes seconds to minutes. */
export const applyJobPollMs = 1_000;

const noHeaders = { get: () => null };

/** The apply.progress line of a job's record: every part's counts, the last part's names. */
function sayProgress(output: Output, job: Pick<ApplyJob, 'parts' | 'written' | 'progress'>): void {
  output.say(cliLines.applyProgress, {
    part: job.parts,
    items: job.written.items,
    transactions: job.written.transactions,
    touched: job.progress.touched,
    touchedNodes: job.progress.touchedNodes,
    remaining: job.progress.remaining,
    remainingNodes: job.progress.remainingNodes,
  });
}

/** Reads in a row that may fail "try again" (the store away, the control plane restarting) before following stops. */
export const applyJobPatience = 10;

/** Whether a failed read of a job is one to ask again: the control plane away, or told "try again". */
const passing = (error: unknown) =>
  error instanceof ApiUnreachableError ||
  (error instanceof ApiProblemError && (error.status === 429 || error.status >= 500));

/**
 * The job's record, asked again while the control plane cannot answer (a store outage outlives
 * a request); past `patience` reads, the failure says what to run, since the job goes on there
 * whatever this process does: `mesh apply --job ID`, not "try again".
 */
async function readJob(
  api: ApiClient,
  output: Output,
  id: string,
  pollMs: number,
  patience: number,
): Promise<ApplyJob> {
  for (let failed = 0; ; failed += 1) {
    try {
      return await api.call<ApplyJob>('GET', `/mesh/apply-jobs/${encodeURIComponent(id)}`);
    } catch (error) {
      if (!passing(error)) throw error;
      const advice = `apply job ${id} goes on on the control plane: follow it again with mesh apply --job ${id}`;
      if (failed + 1 >= patience) {
        if (error instanceof ApiUnreachableError)
          throw new ApiUnreachableError(`${error.message}; ${advice}`, error.reason, { cause: error });
        const problem = error as ApiProblemError;
        throw new ApiProblemError(
          problem.status,
          problem.code,
          `${problem.message}; ${advice}`,
          problem.headers,
        );
      }
      if (failed === 0) output.say(cliLines.applyJobUnread, { job: id, reason: (error as Error).message });
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
  }
}

/**
 * Follows an apply job (docs/mesh-file.md, "An apply as a job") until it ends, saying each part
 * as its record shows it; the job runs on the control plane, so stopping here (Ctrl-C) leaves it
 * running. A failed job is its refusal, exiting as the request's answer would have
 * (`cli.refused`). `shown` is the part already said (the request's own, when it started the job).
 * A record that cannot be read for `patience` reads in a row ends the following, naming the job.
 */
export async function followApplyJob(
  api: ApiClient,
  output: Output,
  id: string,
  shown = 0,
  pollMs = applyJobPollMs,
  patience = applyJobPatience,
): Promise<ApplyJob> {
  for (let said = shown; ; ) {
    const job = await readJob(api, output, id, pollMs, patience);
    if (job.state === 'failed') {
      const error = job.error ?? { status: 500, code: 'internal', message: 'the apply job failed' };
      throw new ApiProblemError(error.status, error.code, `apply job ${id}: ${error.message}`, noHeaders);
    }
    if (job.state === 'done') return job;
    if (job.parts > said) {
      sayProgress(output, job);
      said = job.parts;
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/** The whole apply as one answer: the first part's plan, every part's counts. */
export function wholeOutcome(
  first: BoundedApplyOutcome,
  job: ApplyJob,
): BoundedApplyOutcome & { readonly job: { readonly id: string } } {
  return {
    plan: first.plan,
    planCounts: first.planCounts,
    planCut: first.planCut,
    complete: true,
    removed: job.removed,
    written: job.written,
    progress: job.progress,
    job: { id: job.id },
  };
}

/** The first answer's part said, and the job named, before it is followed or let go (--no-wait). */
export function sayStarted(output: Output, first: BoundedApplyOutcome, id: string): void {
  sayProgress(output, { parts: 1, written: first.written, progress: first.progress });
  output.say(cliLines.applyJob, { job: id });
}

/** `mesh apply --job ID`'s last words: what the job wrote, from its record. */
export function printJob(output: Output, job: ApplyJob, advice = 'mesh push --behind'): void {
  const count = (path: string) => job.plan.counts[path] ?? 0;
  output.line(
    `apply job ${job.id} done on revision ${job.plan.revision} in ${job.parts} parts: added ${count('add.nodes')} nodes, ${count('add.modules')} modules, ${count('add.relations')} relations; labels on ${count('labels')} nodes; removed ${job.removed.nodes} nodes, ${job.removed.modules} modules, ${job.removed.relations} relations (${job.written.items} items in ${job.written.transactions} transactions)`,
  );
  if (job.progress.touched > 0) output.line(`wrote ${job.progress.touched} nodes`);
  const behind = count('behind');
  if (behind > 0) output.line(`${behind} behind; ${advice}`);
}
