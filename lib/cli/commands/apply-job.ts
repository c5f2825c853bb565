import type { ApplyJob } from '../../core/mesh-file/apply-job.ts';
import type { BoundedApplyOutcome } from '../../core/mesh-file/pages.ts';
import { type ApiClient, ApiProblemError } from '../api-client.ts';
import { cliLines } from '../lines.ts';
import type { Output } from '../output.ts';

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

/**
 * Follows an apply job (docs/mesh-file.md, "An apply as a job") until it ends, saying each part
 * as its record shows it; the job runs on the control plane, so stopping here (Ctrl-C) leaves it
 * running. A failed job is its refusal, exiting as the request's answer would have
 * (`cli.refused`). `shown` is the part already said (the request's own, when it started the job).
 */
export async function followApplyJob(
  api: ApiClient,
  output: Output,
  id: string,
  shown = 0,
  pollMs = applyJobPollMs,
): Promise<ApplyJob> {
  for (let said = shown; ; ) {
    const job = await api.call<ApplyJob>('GET', `/mesh/apply-jobs/${encodeURIComponent(id)}`);
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
export function printJob(output: Output, job: ApplyJob): void {
  const count = (path: string) => job.plan.counts[path] ?? 0;
  output.line(
    `apply job ${job.id} done on revision ${job.plan.revision} in ${job.parts} parts: added ${count('add.nodes')} nodes, ${count('add.modules')} modules, ${count('add.relations')} relations; labels on ${count('labels')} nodes; removed ${job.removed.nodes} nodes, ${job.removed.modules} modules, ${job.removed.relations} relations (${job.written.items} items in ${job.written.transactions} transactions)`,
  );
  if (job.progress.touched > 0) output.line(`wrote ${job.progress.touched} nodes`);
  const behind = count('behind');
  if (behind > 0) output.line(`${behind} behind; mesh push --behind`);
}
