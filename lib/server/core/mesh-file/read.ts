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
  /** 6 MiB unless told: what the API's request that carries a file may be (lib/server/api/http.ts). */
  readonly maxBytes?: number;
  /** The live mesh's module kinds (liveKinds), when the file is read against a mesh. */
  readonly kinds?: ReadonlyMap<string, string | null>;
};

export const defaultMaxNodes = 100_000;
/**
 * A mesh file's routes take a file: up to Lambda's 6 MB synchronous payload, its own bound on
 * AWS, the file JSON-escaped inside; the CLI refuses a larger request before sending it.
 */
export const meshFileBodyBytes = 6 * 1024 * 1024;
/**
 * The largest file: the request that carries it is held to `meshFileBodyBytes`, so no file
 * larger can reach a plan or an apply; a 10,000-node file written out node by node is about 1 MB.
 */
export const meshFileMaxBytes = 6 * 1024 * 1024;

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
