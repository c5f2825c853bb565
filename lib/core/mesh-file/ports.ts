import type { Actor } from '../audit/record.ts';
import type { LiveMesh } from './mesh.ts';
import type { ApplyPlan } from './plan.ts';

/** A module's mesh-wide record as read: the assignment writes are conditioned on it. */
export type LiveModule = { readonly version: string | null; readonly provides: string | null };

/** The live mesh, read whole at one revision, with what the writes of an apply are conditioned on. */
export type LiveMeshReading = {
  readonly mesh: LiveMesh;
  readonly modules: ReadonlyMap<string, LiveModule>;
};

/** Reads the whole live mesh (lib/adapters/dynamodb/live-mesh-reader.ts). */
export interface LiveMeshReader {
  read(): Promise<LiveMeshReading>;
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
