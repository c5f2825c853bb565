import type { Actor } from '../audit/record.ts';
import type { ApplyJob, RunningApplyJob } from './apply-job.ts';
import type { LiveMesh } from './mesh.ts';
import type { ApplyPlan } from './plan.ts';
import type { FileTest } from './schema.ts';

/** A module's mesh-wide record as read: the assignment writes are conditioned on it. */
export type LiveModule = { readonly version: string | null; readonly provides: string | null };

/**
 * A file's text (its SHA-256) and the revision of the mesh it describes: when the live mesh is
 * at that revision, the file's plan against it is empty, so the file need not be checked again.
 * Its tests are kept with it (at most 100, schema.ts): the plan says each one's outcome.
 */
export type DescribedRevision = {
  readonly fileDigest: string;
  readonly revision: string;
  readonly tests?: readonly FileTest[];
};

/** The live mesh, read whole at one revision, with what the writes of an apply are conditioned on. */
export type LiveMeshReading = {
  readonly mesh: LiveMesh;
  readonly modules: ReadonlyMap<string, LiveModule>;
  /** The last file an apply was given, with the revision it describes; read with the mesh. */
  readonly described?: DescribedRevision;
};

/** Reads the whole live mesh (lib/server/adapters/mesh-file/live-mesh-reader.ts). */
export interface LiveMeshReader {
  read(): Promise<LiveMeshReading>;
}

/**
 * Reads only some nodes of the live mesh (each node's items) and some modules' records: what one
 * slice of a job's plan writes (lib/server/adapters/mesh-file/live-mesh-reader.ts). The mesh it
 * answers holds those nodes that exist; its revision is theirs alone.
 */
export interface MeshSliceReader {
  read(nodes: readonly string[], modules: readonly string[]): Promise<LiveMeshReading>;
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
 * What a writer has committed so far in one call, kept by the caller: when a write fails midway
 * (the store away), the caller still knows what its part wrote.
 */
export type WriteProgress = { transactions: number; items: number; readonly touched: Set<string> };

export const noWriteProgress = (): WriteProgress => ({ transactions: 0, items: 0, touched: new Set() });

/** One removal an apply makes, as the ledger of its job notes it (before it is made). */
export type LedgerRemoval =
  | {
      readonly kind: 'relation';
      readonly consumerNode: string;
      readonly consumerModule: string;
      readonly providerNode: string;
      readonly providerModule: string;
    }
  | { readonly kind: 'module'; readonly node: string; readonly module: string }
  /** `modules`: the node's assignments as the apply read them, which go with it. */
  | { readonly kind: 'node'; readonly node: string; readonly modules: number };

/**
 * What an apply job wrote, counted from its ledger (lib/server/adapters/mesh-file/apply-jobs.ts): one item
 * committed in each of its transactions, and one noted before each of its removals. Counted so,
 * a part killed or failed after some transactions is counted as exactly as one recorded whole.
 */
export type ApplyLedger = {
  readonly written: WriteTally;
  readonly removed: { readonly relations: number; readonly modules: number; readonly nodes: number };
  /** Every node written or removed, once. */
  readonly touched: number;
};

/** The job an apply's writes are counted under: its id (the writer's ledger item) and its removals. */
export type JobLedger = {
  readonly job: string;
  noteRemoval(removal: LedgerRemoval): Promise<void>;
  forgetRemoval(removal: LedgerRemoval): Promise<void>;
};

/**
 * Carries out a plan's additions and labels in bulk (lib/server/adapters/mesh-file/mesh-file-writer.ts):
 * many facts per transaction, each with the conditions and marks its single write has. Stops
 * between transactions once `until` (epoch ms) has passed, answering `complete: false`; the
 * rest is planned again from what was written.
 */
export interface MeshFileWriter {
  write(
    plan: ApplyPlan,
    reading: LiveMeshReading,
    options: {
      readonly until?: number;
      readonly by: Actor;
      /** The apply job whose ledger each transaction adds its item to. */
      readonly job?: string;
      /** Kept up to date transaction by transaction, for a caller whose write fails midway. */
      readonly progress?: WriteProgress;
    },
  ): Promise<WriteOutcome>;
}

/**
 * Apply jobs and their files (lib/server/adapters/mesh-file/apply-jobs.ts). One runs at a time: `start`
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
  /**
   * Keeps a job's plan, cut in slices (plan-slices.ts), beside its record: written before the
   * record names them, so a part that dies before its record is written plans again.
   */
  keepPlan(id: string, slices: readonly ApplyPlan[]): Promise<void>;
  /** One slice of a job's plan kept by `keepPlan`, read strongly. */
  slice(id: string, index: number): Promise<ApplyPlan>;
  /** What the job's ledger says it wrote and removed, read strongly. */
  ledger(id: string): Promise<ApplyLedger>;
  /** Notes a removal in the job's ledger before it is made; the same removal noted twice is one. */
  noteRemoval(id: string, removal: LedgerRemoval): Promise<void>;
  /** Takes back a removal noted that was refused. */
  forgetRemoval(id: string, removal: LedgerRemoval): Promise<void>;
}

/** Starts the apply flow for a job (lib/server/flows/apply.asl.json on AWS; the local runtime's driver here). */
export interface ApplyFlow {
  started(id: string): Promise<void>;
}
