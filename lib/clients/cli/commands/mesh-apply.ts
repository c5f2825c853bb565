import { readFileSync } from 'node:fs';
import type { ApplyJob } from '../../../server/core/mesh-file/apply-job.ts';
import { type ApplyPlan, whatMoved } from '../../../server/core/mesh-file/index.ts';
import type { BoundedApplyOutcome } from '../../../server/core/mesh-file/pages.ts';
import { ExitCode } from '../../common/exit-codes.ts';
import { type ApiClient, problemError } from '../../http/api-client.ts';
import type { Output } from '../output.ts';
import { cliLines } from '../output-lines.ts';
import { followApplyJob, sayStarted, wholeOutcome } from './apply-job.ts';
import { type ApplyOptions, answered, bodyOf } from './mesh-file.ts';
import { planPages } from './mesh-file-pages.ts';

/** A plan saved by `mesh apply --plan --json`, or an exit code when it cannot be read. */
function savedPlan(output: Output, path: string): ApplyPlan | ExitCode {
  try {
    const plan = JSON.parse(readFileSync(path, 'utf8')) as ApplyPlan;
    if (typeof plan?.revision !== 'string' || typeof plan.digest !== 'string' || !plan.add || !plan.drift)
      throw new Error('not a plan printed by mesh apply --plan --json');
    return plan;
  } catch (error) {
    output.say(cliLines.fileUnreadable, { file: path, reason: (error as Error).message });
    return ExitCode.usage;
  }
}

/**
 * Applies in one request what fits its time (an uploaded file: none, the whole apply is its job's,
 * and the job's record is the result); when that is not all, the answer names the apply
 * job the control plane carries on with (docs/mesh-file.md, "An apply as a job"), and the job is
 * followed to its end, a line a part (or, with --no-wait, named and let go). A saved plan refused
 * as stale is compared with a plan of the file now, to say what moved in between.
 */
export async function applyAll(
  api: ApiClient,
  output: Output,
  options: ApplyOptions,
): Promise<BoundedApplyOutcome | ApplyJob | ExitCode> {
  const body = await bodyOf(api, output, options);
  if (typeof body === 'number') return body;
  const saved = options.fromPlan === undefined ? undefined : savedPlan(output, options.fromPlan);
  if (typeof saved === 'number') return saved;
  const revision = saved?.revision ?? options.revision;
  const digest = saved?.digest ?? options.digest;
  const held = { ...(revision ? { revision } : {}), ...(digest ? { digest } : {}) };
  // A prune is an admin's (a removal and a disenrolment): it has its own route, with its own role.
  const { prune, ...rest } = body;
  const route = prune ? '/mesh/apply/prune' : '/mesh/apply';
  const answer = await api.send('POST', route, { ...rest, ...held });
  const code = (answer.body as { error?: { code?: string } } | undefined)?.error?.code;
  if (answer.status === 409 && code === 'stale_plan' && saved) {
    const now = await planPages(api, output, options, body);
    if (typeof now !== 'number') {
      const moved = whatMoved(saved, now);
      output.say(cliLines.applyMoved, { from: saved.revision, to: now.revision, moved });
    }
    throw problemError(answer);
  }
  if (answer.status === 202) {
    // An uploaded file handed whole to its job: the flow checks, plans and writes it.
    const { job } = answer.body as { job: { id: string } };
    output.say(cliLines.applyJob, { job: job.id });
    if (options.wait === false) {
      output.result({ complete: false, job });
      return ExitCode.ok;
    }
    return followApplyJob(api, output, job.id, 0);
  }
  const first = answered<
    BoundedApplyOutcome & { job?: { id: string }; interrupted?: { code: string; message: string } }
  >(output, options, answer);
  if (typeof first === 'number' || !first.job) return first;
  if (first.interrupted)
    output.say(cliLines.applyInterrupted, {
      job: first.job.id,
      touched: first.progress.touched,
      reason: first.interrupted.message,
    });
  if (first.complete && !first.interrupted) return first;
  sayStarted(output, first, first.job.id);
  if (options.wait === false) {
    output.result(first);
    return ExitCode.ok;
  }
  return wholeOutcome(first, await followApplyJob(api, output, first.job.id, 1));
}
