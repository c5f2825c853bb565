import { expandMeshFile } from './expand.ts';
import { checkTests } from './file-tests.ts';
import { type DesiredMesh, defaultLimits, type MeshFileLimits } from './mesh.ts';
import { BadMeshFileError, type Locate, type MeshFileProblem, sortProblems } from './problems.ts';
import type { MeshFile } from './schema.ts';
import { type MeshFileFormat, readSource } from './source.ts';

export type ReadMeshFileOptions = {
  readonly limits?: Partial<MeshFileLimits>;
  /** 100,000 unless told: ten times the fleets the benches apply, well short of what hurts. */
  readonly maxNodes?: number;
  /** 64 MiB unless told: what an upload takes (uploads.ts). */
  readonly maxBytes?: number;
  /** The live mesh's module kinds (liveKinds), when the file is read against a mesh. */
  readonly kinds?: ReadonlyMap<string, string | null>;
};

export const defaultMaxNodes = 100_000;
/**
 * A mesh file's routes take a file in their body: up to Lambda's 6 MB synchronous payload, the
 * file JSON-escaped inside. The CLI sends a larger file in parts (uploads.ts) and names it.
 */
export const meshFileBodyBytes = 6 * 1024 * 1024;
/**
 * The largest file, uploaded in parts: 100,000 nodes (the file's own bound) written out node by
 * node, at about 380 bytes a node (a 50,000-node file is about 19 MB), fit in it.
 */
export const meshFileMaxBytes = 64 * 1024 * 1024;

/** A file read whole: what it asks for, and every problem found in it, in file order. */
export type CheckedMeshFile = {
  readonly format: MeshFileFormat;
  readonly file: MeshFile | undefined;
  /** The mesh the file asks for; meaningful only when there are no problems. */
  readonly mesh: DesiredMesh | undefined;
  /** The first `maxProblems` problems in file order. */
  readonly problems: readonly MeshFileProblem[];
  /** How many more were found and left out, so an answer stays small. */
  readonly omitted: number;
  readonly locate: Locate;
};

/** Problems reported at most: a file of 100,000 bad names needs its first screenful, not all. */
export const maxProblems = 1000;

const capped = (problems: readonly MeshFileProblem[]) => {
  const sorted = sortProblems(problems);
  return { problems: sorted.slice(0, maxProblems), omitted: Math.max(0, sorted.length - maxProblems) };
};

/**
 * Parses, checks and expands a mesh file, and runs its tests against the mesh it asks for. Never
 * throws for a bad file: a file's problems are an answer (`readMeshFile` throws them).
 */
export function checkMeshFile(text: string, options: ReadMeshFileOptions = {}): CheckedMeshFile {
  const source = readSource(text, options.maxBytes ?? meshFileMaxBytes);
  const { format, file, locate } = source;
  if (!file) return { format, file, mesh: undefined, ...capped(source.problems), locate };
  const expanded = expandMeshFile(file, locate, {
    limits: { ...defaultLimits, ...options.limits },
    maxNodes: options.maxNodes ?? defaultMaxNodes,
    kinds: options.kinds,
  });
  const tested = checkTests(file.tests ?? [], expanded.mesh.nodes, locate);
  const found = capped([...source.problems, ...expanded.problems, ...tested]);
  return { format, file, mesh: expanded.mesh, ...found, locate };
}

/** As checkMeshFile, for callers that go on only with a good file: BadMeshFileError otherwise. */
export function readMeshFile(
  text: string,
  options: ReadMeshFileOptions = {},
): { format: MeshFileFormat; file: MeshFile; mesh: DesiredMesh } {
  const checked = checkMeshFile(text, options);
  if (checked.problems.length > 0 || !checked.file || !checked.mesh)
    throw new BadMeshFileError(checked.problems, checked.omitted);
  return { format: checked.format, file: checked.file, mesh: checked.mesh };
}
