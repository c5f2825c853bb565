import { randomBytes } from 'node:crypto';
import type { Actor } from '../audit/record.ts';
import { MeshError } from '../mesh/errors.ts';
import { type PlanCounts, planCountsOf } from './pages.ts';
import type { ApplyPlan } from './plan.ts';
import type { ApplyLedger, WriteTally } from './ports.ts';
import type { ApplyOutcome, ApplyProgress } from './service.ts';

/**
 * An apply that writes is a job (docs/mesh-file.md, "An apply as a job"): opened by its request
 * before its first write, so a request that fails midway never leaves writes no record names. Its
 * record says how far it got, part after part, and how it ended. The request's own part is part
 * 1, recorded when it ends; each advance of the apply flow adds one. The file is kept beside the
 * record, not in it.
 */
export type ApplyJobState = 'running' | 'done' | 'failed';

export type ApplyJob = {
  readonly id: string;
  readonly state: ApplyJobState;
  readonly prune: boolean;
  readonly allowMassRemoval: boolean;
  /** Who asked: each part's writes are recorded as theirs (docs/audit.md). */
  readonly by: Actor;
  /** The first part's plan: its revision, digest and how long each of its lists is. */
  readonly plan: {
    readonly revision: string;
    readonly digest: string;
    readonly counts: PlanCounts;
    /** The module versions the file sets (ApplyPlan's `versions`): upgraded once the job is done. */
    readonly versions?: ApplyPlan['versions'];
  };
  readonly parts: number;
  /**
   * The plan kept with the job in slices (plan-slices.ts), once a part of the flow planned it:
   * how many, the next to carry out, and each one's node count and first few names (for
   * `remaining`). Absent while no part has kept it: the next part plans from the live mesh.
   */
  readonly stored?: {
    readonly slices: readonly { readonly nodes: number; readonly named: readonly string[] }[];
    readonly next: number;
  };
  /**
   * While the request's own part runs (parts 0), the time until which it holds the job: the
   * flow waits until then, and goes on from the mesh as it is if the request never recorded its
   * part (it failed with the store away, or its process died).
   */
  readonly heldUntil?: string;
  /** Counted from the job's ledger (ports.ts, ApplyLedger): exact whatever parts failed or died. */
  readonly written: WriteTally;
  readonly removed: { readonly relations: number; readonly modules: number; readonly nodes: number };
  /** `touched` is every part's; the names and `remaining` are the last part's. */
  readonly progress: ApplyProgress;
  readonly startedAt: string;
  readonly updatedAt: string;
  /** Why a failed job ended: the code and message its answer would have had, never a defect's text. */
  readonly error?: { readonly status: number; readonly code: string; readonly message: string };
};

/** Who holds the one running job, and when a part of it was last recorded. */
export type RunningApplyJob = { readonly id: string; readonly heardAt: string };

export const applyJobIdPattern = /^\d{8}T\d{9}Z-[0-9a-f]{6}$/;
export const newApplyJobId = (at: Date) =>
  `${at.toISOString().replace(/[-:.]/g, '')}-${randomBytes(3).toString('hex')}`;

/**
 * A running job none of whose parts has been recorded for this long is taken to be lost (its
 * flow failed past its retries): a new job may take its place, and ends it `failed`. Three
 * times mesh-apply-advance's longest part.
 */
export const applyJobStaleMs = 15 * 60_000;

export const isStale = (running: RunningApplyJob, now: Date) =>
  now.getTime() - Date.parse(running.heardAt) > applyJobStaleMs;

/**
 * The record of a job opened by a request before its first write: running, no part recorded yet,
 * held by the request until `heldUntil`.
 */
export function openedJob(
  id: string,
  request: { readonly prune?: boolean; readonly allowMassRemoval?: boolean; readonly by: Actor },
  plan: ApplyJob['plan'],
  remaining: Pick<ApplyProgress, 'remaining' | 'remainingNodes'>,
  now: Date,
  heldUntil: Date,
): ApplyJob {
  const at = now.toISOString();
  return {
    id,
    state: 'running',
    prune: request.prune ?? false,
    allowMassRemoval: request.allowMassRemoval ?? false,
    by: request.by,
    plan,
    parts: 0,
    heldUntil: heldUntil.toISOString(),
    written: { transactions: 0, items: 0 },
    removed: { relations: 0, modules: 0, nodes: 0 },
    progress: { touched: 0, touchedNodes: [], ...remaining },
    startedAt: at,
    updatedAt: at,
  };
}

/** The plan a job opened before planning carries until its first part: none yet. */
export const notPlanned = { revision: '', digest: '', counts: {} } as const;
export const planned = (job: Pick<ApplyJob, 'plan'>) => job.plan.revision !== '';

/** Whether the request that opened the job still holds it: no part recorded, its time not up. */
export const heldByRequest = (job: ApplyJob, now: Date) =>
  job.parts === 0 && job.heldUntil !== undefined && now.getTime() < Date.parse(job.heldUntil);

/**
 * The job after one more part: done when the part completed the apply. Its counts are the
 * ledger's when it was read (every transaction committed and removal made by any part, a part
 * that died included), else the parts' own added up.
 */
export function progressedJob(job: ApplyJob, part: ApplyOutcome, now: Date, ledger?: ApplyLedger): ApplyJob {
  const { heldUntil: _held, ...rest } = job;
  return {
    ...rest,
    // A job opened before any plan (an uploaded file, planned by the flow) takes its first part's.
    plan: planned(job)
      ? job.plan
      : {
          revision: part.plan.revision,
          digest: part.plan.digest,
          counts: planCountsOf(part.plan),
          versions: part.plan.versions,
        },
    state: part.complete ? 'done' : 'running',
    parts: job.parts + 1,
    written: ledger?.written ?? {
      transactions: job.written.transactions + part.written.transactions,
      items: job.written.items + part.written.items,
    },
    removed: ledger?.removed ?? {
      relations: job.removed.relations + part.removed.relations,
      modules: job.removed.modules + part.removed.modules,
      nodes: job.removed.nodes + part.removed.nodes,
    },
    progress: { ...part.progress, touched: ledger?.touched ?? job.progress.touched + part.progress.touched },
    updatedAt: now.toISOString(),
  };
}

export function failedJob(
  job: ApplyJob,
  error: NonNullable<ApplyJob['error']>,
  now: Date,
  ledger?: ApplyLedger,
): ApplyJob {
  const { heldUntil: _held, ...rest } = job;
  return {
    ...rest,
    ...(ledger
      ? {
          written: ledger.written,
          removed: ledger.removed,
          progress: { ...job.progress, touched: ledger.touched },
        }
      : {}),
    state: 'failed',
    error,
    updatedAt: now.toISOString(),
  };
}

/** The one running job, and the next long apply it refuses: one apply job at a time. */
export class ApplyJobRunningError extends MeshError {
  override name = 'ApplyJobRunningError';
  readonly job: string;
  constructor(job: string, options?: ErrorOptions) {
    super(
      `apply job ${job} is running: follow it with mesh apply --job ${job}, and apply again once it has ended`,
      options,
    );
    this.job = job;
  }
}

export class ApplyJobNotFoundError extends MeshError {
  override name = 'ApplyJobNotFoundError';
  readonly job: string;
  constructor(job: string, options?: ErrorOptions) {
    super(`no apply job ${job}`, options);
    this.job = job;
  }
}

/** A part recorded by another advance (a flow's retry) since this one read the job: this one's counts are not kept. */
export class ApplyJobRaceError extends MeshError {
  override name = 'ApplyJobRaceError';
  readonly job: string;
  constructor(job: string, options?: ErrorOptions) {
    super(`apply job ${job} moved on since it was read`, options);
    this.job = job;
  }
}
