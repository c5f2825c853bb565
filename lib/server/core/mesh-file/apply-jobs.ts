import { logLine, say } from '../coded-lines.ts';
import { meshErrors } from '../mesh/errors.ts';
import { pushLines } from '../mesh/log-lines.ts';
import type { Log } from '../ports.ts';
import { describeCause, StoreUnavailableError } from '../unavailable.ts';
import type { RunningApplyJob } from './apply-job.ts';
import {
  type ApplyJob,
  ApplyJobNotFoundError,
  ApplyJobRaceError,
  ApplyJobRunningError,
  applyJobStaleMs,
  failedJob,
  heldByRequest,
  isStale,
  newApplyJobId,
  notPlanned,
  openedJob,
  progressedJob,
} from './apply-job.ts';
import { nodesOf } from './apply-progress.ts';
import { meshFileErrors } from './errors.ts';
import { planCountsOf } from './pages.ts';
import type { ApplyPlan } from './plan.ts';
import { slicesOf } from './plan-slices.ts';
import type { ApplyFlow, ApplyJobStore, ApplyLedger, JobLedger } from './ports.ts';
import { type ApplyOutcome, type ApplyRequest, type MeshFileService, PartlyAppliedError } from './service.ts';
import { fileOf, type MeshUploadStore, type Named } from './uploads.ts';

/**
 * An apply as a job (docs/mesh-file.md, "An apply as a job"): the request applies what fits its
 * time; what does not goes on as a job the apply flow advances part by part: its first part plans
 * the rest from the live mesh once and keeps the plan in slices, each part carries slices out,
 * and a slice taken again leaves out what it wrote (slicedPart).
 */
export type ApplyJobDeps = {
  readonly meshFiles: MeshFileService;
  readonly applyJobs: ApplyJobStore;
  readonly applyFlow: ApplyFlow;
  /** Where a file too large for one request was uploaded, when the request names it. */
  readonly meshUploads?: MeshUploadStore;
  readonly now: () => Date;
};

/**
 * How long after the request's own deadline its job is still held by it: a transaction in flight
 * at the deadline may still be committing, and the request records its part after it.
 */
export const requestHoldMarginMs = 10_000;

/** The job's ledger, as the service counts an apply's writes under it. */
export const jobLedger = (applyJobs: ApplyJobStore, job: string): JobLedger => ({
  job,
  noteRemoval: (removal) => applyJobs.noteRemoval(job, removal),
  forgetRemoval: (removal) => applyJobs.forgetRemoval(job, removal),
});

/**
 * What the request's answer says: its part's outcome, and the job when one goes on with the rest;
 * `interrupted` when the request's part was cut short by a store that could not be asked (the job
 * goes on once it can), with what the request wrote before.
 */
export type ApplyAnswer = {
  /** The request's own part; none when the whole apply was handed to its job (an uploaded file). */
  readonly outcome?: ApplyOutcome;
  readonly job?: { readonly id: string };
  readonly interrupted?: { readonly code: string; readonly message: string };
};

/**
 * An apply request: what fits its time is applied by the request, and an apply that writes is a
 * job from before its first write (docs/mesh-file.md, "An apply as a job"): opened and its flow
 * started once the plan is known to write, held by the request while its part runs, then
 * recorded as part 1. What the request has no time for, the flow carries on. A request whose
 * part fails midway names the job: the store away, the flow goes on when it is back
 * (`interrupted`); a refusal after some writes ends the job failed, and the refusal names it
 * (PartlyAppliedError, answered by the handler). While a job runs, a new apply is refused before
 * it writes anything (ApplyJobRunningError): two applies of two files planning each from what the
 * other wrote would undo each other's work under --prune.
 */
export async function applyOrStartJob(deps: ApplyJobDeps, named: Named<ApplyRequest>): Promise<ApplyAnswer> {
  const running = await deps.applyJobs.running();
  const stale = running && isStale(running, deps.now()) ? running : undefined;
  if (running && !stale) throw new ApplyJobRunningError(running.id);
  // An upload is read, each part and the whole checked, before the file is: a part missing or
  // tampered with is refused here, having written nothing.
  const { upload, ...rest } = named as Named<ApplyRequest> & { readonly upload?: string };
  const request: ApplyRequest = { ...rest, file: await fileOf(deps, named, named.by) };
  if (upload !== undefined && request.revision === undefined && request.digest === undefined)
    return { job: { id: await handedToJob(deps, request, stale) } };
  let opened: ApplyJob | undefined;
  const opening = async (plan: ApplyPlan): Promise<JobLedger> => {
    const now = deps.now();
    const nodes = [...nodesOf(plan)].sort();
    const heldUntil = new Date((request.until ?? now.getTime() + applyJobStaleMs) + requestHoldMarginMs);
    const job = await startedJob(deps, request, stale, {
      planned: {
        revision: plan.revision,
        digest: plan.digest,
        counts: planCountsOf(plan),
        versions: plan.versions,
      },
      progress: { remaining: nodes.length, remainingNodes: nodes.slice(0, 10) },
      now,
      heldUntil,
    });
    opened = job;
    return jobLedger(deps.applyJobs, job.id);
  };
  let outcome: ApplyOutcome;
  try {
    outcome = await deps.meshFiles.apply(request, { opening });
  } catch (error) {
    if (!(error instanceof PartlyAppliedError) || !opened) throw error;
    const cause = error.cause;
    if (cause instanceof StoreUnavailableError)
      // Nothing can be recorded now: the flow, started with the job, goes on once the request's
      // hold is over and the store answers, from the mesh as it then is.
      return {
        outcome: error.outcome,
        job: { id: opened.id },
        interrupted: { code: 'try_again', message: describeCause(cause) },
      };
    const reason = jobErrorOf(cause);
    const now = deps.now();
    const ledger = await deps.applyJobs.ledger(opened.id).catch(() => undefined);
    await deps.applyJobs.record(failedJob(opened, reason, now, ledger), 0).catch(() => undefined);
    throw error;
  }
  const job = opened;
  if (!job) return { outcome };
  const now = deps.now();
  try {
    const ledger = await deps.applyJobs.ledger(job.id);
    await deps.applyJobs.record(progressedJob(job, outcome, now, ledger), 0);
  } catch (error) {
    if (!(error instanceof StoreUnavailableError)) throw error;
    // Written, and not recorded: the flow records it once the hold is over (nothing left to
    // write, if this part was all), so the answer is the writes', with the job named.
    return {
      outcome,
      job: { id: job.id },
      interrupted: { code: 'try_again', message: describeCause(error) },
    };
  }
  return outcome.complete ? { outcome } : { outcome, job: { id: job.id } };
}

/**
 * An uploaded file is large (over 4 MiB: about 30,000 nodes and more): its check, the read of the
 * mesh and the plan can take the request's whole 29 s before a first write, so the request opens
 * the job with the file and no plan, starts the flow and answers; the flow's first part checks,
 * plans and writes in its 300 s, and the job's record takes that part's plan. A file with problems
 * ends the job `failed`, `bad_mesh_file`, having written nothing.
 */
async function handedToJob(
  deps: ApplyJobDeps,
  request: ApplyRequest,
  stale: RunningApplyJob | undefined,
): Promise<string> {
  const now = deps.now();
  const job = await startedJob(deps, request, stale, {
    planned: notPlanned,
    progress: { remaining: 0, remainingNodes: [] },
    now,
    heldUntil: now,
  });
  return job.id;
}

/**
 * A new job, opened with the file and its flow started: the one way a request opens a job,
 * whether it planned first or hands the whole apply over.
 */
async function startedJob(
  deps: ApplyJobDeps,
  request: ApplyRequest,
  stale: RunningApplyJob | undefined,
  opening: {
    readonly planned: Parameters<typeof openedJob>[2];
    readonly progress: Parameters<typeof openedJob>[3];
    readonly now: Date;
    readonly heldUntil: Date;
  },
): Promise<ApplyJob> {
  const { now } = opening;
  const job = openedJob(
    newApplyJobId(now),
    request,
    opening.planned,
    opening.progress,
    now,
    opening.heldUntil,
  );
  await deps.applyJobs.start(job, request.file, stale);
  try {
    await deps.applyFlow.started(job.id);
  } catch (error) {
    // A job no flow advances would hold the running item until it is stale: end it, and the
    // request, which has written nothing yet, is told "try again".
    await deps.applyJobs
      .record(failedJob(job, { status: 503, code: 'try_again', message: describeCause(error) }, now), 0)
      .catch(() => undefined);
    throw error;
  }
  return job;
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
    const message = row.messageShown ? (error as Error).message : (row.says ?? 'refused');
    return { status: pick(row.status), code: pick(row.code), message };
  }
  return {
    status: 500,
    code: 'internal',
    message: 'the apply failed unexpectedly; the control plane logged why',
  };
}

/**
 * The apply flow's Task (lib/server/flows/apply.asl.json): one part of the job, bounded by the
 * invocation's remaining time, and its progress recorded, counted from the job's ledger. While
 * the request that opened the job still holds it, the flow waits. A part the mesh refuses (a
 * condition that no longer holds, a file that no longer checks against the live kinds, a mass
 * removal) ends the job `failed` with its code; the store away is thrown, for the flow's Retry;
 * a record another advance wrote first is left to it.
 */
export async function advanceApplyJob(
  deps: AdvanceDeps & { readonly log: Log },
  input: unknown,
  remainingMs: number,
): Promise<{ readonly id: string; readonly finished: boolean; readonly waitSeconds: number }> {
  const id = String((input as { id?: unknown } | null)?.id ?? '');
  const read = await deps.applyJobs.read(id);
  if (read?.state !== 'running') return { id, finished: true, waitSeconds: 0 };
  const job = read;
  if (heldByRequest(job, deps.now())) {
    const left = Date.parse(job.heldUntil as string) - deps.now().getTime();
    return { id, finished: false, waitSeconds: Math.min(60, Math.max(1, Math.ceil(left / 1000))) };
  }
  const until = deps.now().getTime() + Math.max(1_000, remainingMs - advanceMarginMs);
  let next: ApplyJob;
  try {
    next = deps.meshFiles.slicing
      ? await slicedPart(deps, job, until)
      : progressedJob(job, await plannedPart(deps, job, until), deps.now(), await deps.applyJobs.ledger(id));
  } catch (thrown) {
    const error = thrown instanceof PartlyAppliedError ? thrown.cause : thrown;
    if (error instanceof StoreUnavailableError) throw error;
    const reason = jobErrorOf(error);
    if (reason.code === 'internal')
      logLine(deps.log, say(pushLines.applyJobFailed, { job: id, reason: describeCause(error) }));
    next = failedJob(job, reason, deps.now(), await ledgerOrNone(deps.applyJobs, id));
  }
  try {
    await deps.applyJobs.record(next, job.parts);
  } catch (error) {
    if (!(error instanceof ApplyJobRaceError)) throw error;
    return { id, finished: false, waitSeconds: 1 };
  }
  return { id, finished: next.state !== 'running', waitSeconds: 0 };
}

type AdvanceDeps = Omit<ApplyJobDeps, 'applyFlow' | 'meshUploads'> & {
  /** Nodes a slice of a kept plan holds (plan-slices.ts); the default unless told. */
  readonly nodesPerSlice?: number;
};

/** A part that plans the rest from the live mesh, whole: the service's without a slice reader. */
async function plannedPart(deps: AdvanceDeps, job: ApplyJob, until: number): Promise<ApplyOutcome> {
  const loaded = await deps.applyJobs.load(job.id);
  if (!loaded) throw new ApplyJobNotFoundError(job.id);
  return deps.meshFiles.apply(
    { file: loaded.file, prune: job.prune, allowMassRemoval: job.allowMassRemoval, by: job.by, until },
    { ledger: jobLedger(deps.applyJobs, job.id) },
  );
}

/**
 * A part of a job that keeps its plan (docs/mesh-file.md, "An apply as a job"). The first part
 * of the flow reads the file and the whole mesh once, plans, checks the plan as an apply does and
 * keeps it with the job in slices; every part then carries out slices from the job's cursor while
 * its time lasts (at least one), each reading only its own nodes. A slice cut short by the time,
 * or by a part that died, is taken again from its start: what it wrote is there and left out.
 * A mesh changed since the plan is met slice by slice, as it is when its slice is read (sliceLeft).
 */
async function slicedPart(deps: AdvanceDeps, job: ApplyJob, until: number): Promise<ApplyJob> {
  let planned = job;
  let plan: ApplyPlan | undefined;
  if (!job.stored) {
    const loaded = await deps.applyJobs.load(job.id);
    if (!loaded) throw new ApplyJobNotFoundError(job.id);
    plan = await deps.meshFiles.planForJob({
      file: loaded.file,
      prune: job.prune,
      allowMassRemoval: job.allowMassRemoval,
    });
    const slices = slicesOf(plan, deps.nodesPerSlice);
    await deps.applyJobs.keepPlan(job.id, slices);
    planned = {
      ...job,
      stored: {
        next: 0,
        slices: slices.map((slice) => {
          const nodes = [...nodesOf(slice)].sort();
          return { nodes: nodes.length, named: nodes.slice(0, 10) };
        }),
      },
    };
  }
  const stored = planned.stored as NonNullable<ApplyJob['stored']>;
  const ledger = jobLedger(deps.applyJobs, job.id);
  const removed = { relations: 0, modules: 0, nodes: 0 };
  const written = { transactions: 0, items: 0 };
  const touched = new Set<string>();
  let cursor = stored.next;
  let cut: ApplyOutcome | undefined;
  let carried = 0;
  try {
    while (cursor < stored.slices.length && (carried === 0 || Date.now() < until)) {
      const slice = await deps.applyJobs.slice(job.id, cursor);
      const part = await deps.meshFiles.applySlice(slice, { by: job.by, until }, ledger);
      carried += 1;
      removed.relations += part.removed.relations;
      removed.modules += part.removed.modules;
      removed.nodes += part.removed.nodes;
      written.transactions += part.written.transactions;
      written.items += part.written.items;
      for (const node of part.progress.touchedNodes) touched.add(node);
      if (!part.complete) {
        cut = part;
        break;
      }
      cursor += 1;
    }
  } catch (error) {
    // The cursor moved this part is kept only with the record; a failure records none of it.
    if (error instanceof PartlyAppliedError) throw error.cause;
    throw error;
  }
  const after = stored.slices.slice(cut ? cursor + 1 : cursor);
  const remaining = (cut?.progress.remaining ?? 0) + after.reduce((sum, slice) => sum + slice.nodes, 0);
  const named = [...(cut?.progress.remainingNodes ?? []), ...after.flatMap((slice) => slice.named)].slice(
    0,
    10,
  );
  const outcome: ApplyOutcome = {
    plan: plan ?? ({ revision: job.plan.revision, digest: job.plan.digest } as ApplyPlan),
    complete: cursor === stored.slices.length,
    removed,
    written,
    progress: {
      touched: touched.size,
      touchedNodes: [...touched].sort().slice(0, 10),
      remaining,
      remainingNodes: named,
    },
  };
  const progressed = progressedJob(planned, outcome, deps.now(), await deps.applyJobs.ledger(job.id));
  return { ...progressed, stored: { ...stored, next: cursor } };
}

/** The ledger when the store answers; a failure is recorded with the parts' own counts otherwise. */
const ledgerOrNone = (applyJobs: ApplyJobStore, id: string): Promise<ApplyLedger | undefined> =>
  applyJobs.ledger(id).catch(() => undefined);
