import { logLine, say } from '../coded-lines.ts';
import { meshErrors } from '../mesh/errors.ts';
import { pushLines } from '../mesh/lines.ts';
import type { Log } from '../ports.ts';
import { describeCause, StoreUnavailableError } from '../unavailable.ts';
import {
  type ApplyJob,
  ApplyJobNotFoundError,
  ApplyJobRaceError,
  ApplyJobRunningError,
  failedJob,
  isStale,
  newApplyJobId,
  progressedJob,
  startedJob,
} from './apply-job.ts';
import { meshFileErrors } from './errors.ts';
import { planCountsOf } from './pages.ts';
import type { ApplyFlow, ApplyJobStore } from './ports.ts';
import type { ApplyOutcome, ApplyRequest, MeshFileService } from './service.ts';

/**
 * An apply as a job (docs/mesh-file.md, "An apply as a job"): the request applies what fits its
 * time; what does not goes on as a job the apply flow advances part by part, each part planning
 * the rest from the live mesh as the request did, so a part taken again writes nothing twice.
 */
export type ApplyJobDeps = {
  readonly meshFiles: MeshFileService;
  readonly applyJobs: ApplyJobStore;
  readonly applyFlow: ApplyFlow;
  readonly now: () => Date;
};

/**
 * The request's part, and the job that carries on when it did not complete. While a job runs, a
 * new apply is refused before it writes anything (ApplyJobRunningError): two applies of two files
 * planning each from what the other wrote would undo each other's work under --prune, and a
 * refusal after the request's part would leave that part written.
 */
export async function applyOrStartJob(
  deps: ApplyJobDeps,
  request: ApplyRequest,
): Promise<{ readonly outcome: ApplyOutcome; readonly job?: { readonly id: string } }> {
  const running = await deps.applyJobs.running();
  const stale = running && isStale(running, deps.now()) ? running : undefined;
  if (running && !stale) throw new ApplyJobRunningError(running.id);
  const outcome = await deps.meshFiles.apply(request);
  if (outcome.complete) return { outcome };
  const now = deps.now();
  const job = startedJob(
    newApplyJobId(now),
    request,
    { ...outcome, planCounts: planCountsOf(outcome.plan) },
    now,
  );
  await deps.applyJobs.start(job, request.file, stale);
  try {
    await deps.applyFlow.started(job.id);
  } catch (error) {
    // A job no flow advances would hold the running item until it is stale: end it, and the
    // operator's next apply (told "try again") plans the rest from where this part left it.
    await deps.applyJobs
      .record(
        failedJob(job, { status: 503, code: 'try_again', message: describeCause(error) }, now),
        job.parts,
      )
      .catch(() => undefined);
    throw error;
  }
  return { outcome, job: { id: job.id } };
}

export async function readApplyJob(deps: Pick<ApplyJobDeps, 'applyJobs'>, id: string): Promise<ApplyJob> {
  const job = await deps.applyJobs.read(id);
  if (!job) throw new ApplyJobNotFoundError(id);
  return job;
}

/** Kept back from mesh-apply-advance's remaining time for the transactions under way and the record. */
export const advanceMarginMs = 20_000;

/** What a refusal of a part says in the job's record: its answer's status, code and message. */
export function jobErrorOf(error: unknown): NonNullable<ApplyJob['error']> {
  for (const table of [meshFileErrors, meshErrors]) {
    const row = table.rowOf(error);
    if (!row || row.status === 500) continue;
    const pick = <T>(value: T | ((e: Error) => T)) =>
      typeof value === 'function' ? (value as (e: Error) => T)(error as Error) : value;
    const message = row.told ? (error as Error).message : (row.says ?? 'refused');
    return { status: pick(row.status), code: pick(row.code), message };
  }
  return {
    status: 500,
    code: 'internal',
    message: 'the apply failed unexpectedly; the control plane logged why',
  };
}

/**
 * The apply flow's Task (lib/flow/apply.asl.json): one part of the job, bounded by the
 * invocation's remaining time, and its progress recorded. A part the mesh refuses (a condition
 * that no longer holds, a file that no longer checks against the live kinds, a mass removal)
 * ends the job `failed` with its code; the store away is thrown, for the flow's Retry; a record
 * another advance wrote first is left to it.
 */
export async function advanceApplyJob(
  deps: Omit<ApplyJobDeps, 'applyFlow'> & { readonly log: Log },
  input: unknown,
  remainingMs: number,
): Promise<{ readonly id: string; readonly finished: boolean; readonly waitSeconds: number }> {
  const id = String((input as { id?: unknown } | null)?.id ?? '');
  const loaded = await deps.applyJobs.load(id);
  if (loaded?.job.state !== 'running') return { id, finished: true, waitSeconds: 0 };
  const { job, file } = loaded;
  const until = deps.now().getTime() + Math.max(1_000, remainingMs - advanceMarginMs);
  let next: ApplyJob;
  try {
    const part = await deps.meshFiles.apply({
      file,
      prune: job.prune,
      allowMassRemoval: job.allowMassRemoval,
      by: job.by,
      until,
    });
    next = progressedJob(job, part, deps.now());
  } catch (error) {
    if (error instanceof StoreUnavailableError) throw error;
    const reason = jobErrorOf(error);
    if (reason.code === 'internal')
      logLine(deps.log, say(pushLines.applyJobFailed, { job: id, reason: describeCause(error) }));
    next = failedJob(job, reason, deps.now());
  }
  try {
    await deps.applyJobs.record(next, job.parts);
  } catch (error) {
    if (!(error instanceof ApplyJobRaceError)) throw error;
    return { id, finished: false, waitSeconds: 1 };
  }
  return { id, finished: next.state !== 'running', waitSeconds: 0 };
}
