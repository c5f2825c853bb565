import type { Actor } from '../audit/record.ts';
import type { ApplyJob, RunningApplyJob } from './apply-job.ts';
import type { LiveMesh } from './mesh.ts';
import type { ApplyPlan } from './plan.ts';

/** A module's mesh-wide record as read: the assignment writes are conditioned on it. */
export type LiveModule = { readonly version: string | null; readonly provides: string | null };

/**
 * A file's text (its SHA-256) and the revision of the mesh it describes: when the live mesh is
 * at that revision, the file's plan against it is empty, so the file need not be checked again.
 */
export type DescribedRevision = { readonly fileDigest: string; readonly revision: string };

/** The live mesh, read whole at one revision, with what the writes of an apply are conditioned on. */
export type LiveMeshReading = {
  readonly mesh: LiveMesh;
  readonly modules: ReadonlyMap<string, LiveModule>;
  /** The last file an apply was given, with the revision it describes; read with the mesh. */
  readonly described?: DescribedRevision;
};

/** Reads the whole live mesh (lib/adapters/dynamodb/live-mesh-reader.ts). */
export interface LiveMeshReader {
  read(): Promise<LiveMeshReading>;
}

/** Keeps the last file an apply was given and the revision it describes, read back with the mesh. */
export interface DescribedRevisionStore {
  keep(described: DescribedRevision): Promise<void>;
}

/** What an apply's writes came to. */
export type WriteTally = {
  readonly transactions: number;
  readonly items: number;
};

/** What one call of the writer did: its tally, the nodes whose facts it committed, whether it finished. */
export type WriteOutcome = WriteTally & {
  readonly touched: readonly string[];
  readonly complete: boolean;
};

/**
 * Carries out a plan's additions and labels in bulk (lib/adapters/dynamodb/mesh-file-writer.ts):
 * many facts per transaction, each with the conditions and marks its single write has. Stops
 * between transactions once `until` (epoch ms) has passed, answering `complete: false`; the
 * rest is planned again from what was written.
 */
export interface MeshFileWriter {
  write(
    plan: ApplyPlan,
    reading: LiveMeshReading,
    options: { readonly until?: number; readonly by: Actor },
  ): Promise<WriteOutcome>;
}

/**
 * Apply jobs and their files (lib/adapters/dynamodb/apply-jobs.ts). One runs at a time: `start`
 * refuses (ApplyJobRunningError) while another holds the running item, unless that one is
 * `takingOver`, a stale job (apply-job.ts), which it ends `failed`. `record` writes the job's next
 * state only if no part was recorded since `seenParts` (ApplyJobRaceError), and lets the running
 * item go when the job ends.
 */
export interface ApplyJobStore {
  running(): Promise<RunningApplyJob | undefined>;
  start(job: ApplyJob, file: string, takingOver?: RunningApplyJob): Promise<void>;
  read(id: string): Promise<ApplyJob | undefined>;
  load(id: string): Promise<{ readonly job: ApplyJob; readonly file: string } | undefined>;
  record(next: ApplyJob, seenParts: number): Promise<void>;
}

/** Starts the apply flow for a job (lib/flow/apply.asl.json on AWS; the local runtime's driver here). */
export interface ApplyFlow {
  started(id: string): Promise<void>;
}
