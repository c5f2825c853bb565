import { MeshError } from '../mesh/errors.ts';

/**
 * What can be wrong with a mesh file, one code each, so scripts can act on the code and people
 * on the message. docs/mesh-file.md lists them.
 */
export const problemCodes = [
  /** Not well-formed YAML or JSON. */
  'syntax',
  /** The file is larger than a mesh file may be. */
  'too-large',
  /** The file nests deeper than a mesh file may (its collections, 32 levels). */
  'too-deep',
  /** A field the file format does not have (a typo, most often). */
  'unknown-field',
  /** A value of the wrong type or shape. */
  'invalid',
  /** `version` is not 1. */
  'bad-version',
  /** A node, module or group name that is not a DNS label. */
  'bad-name',
  /** A provider kind that is not a lowercase letter then letters, digits or hyphens. */
  'bad-kind',
  /** A label key or value outside its rules. */
  'bad-label',
  /** A `consumes` entry that is not NODE/MODULE. */
  'bad-reference',
  /** A node range such as `web-[001-800]` that is malformed or too large. */
  'bad-range',
  /** More nodes than a mesh file may hold. */
  'too-many-nodes',
  /** A node defined twice: in two groups, or in a group and in `nodes`, or twice in `nodes`. */
  'duplicate-node',
  /** A key given twice in one map (a module, a label, a group). */
  'duplicate-key',
  /** The same provider listed twice in one module's `consumes`. */
  'duplicate-relation',
  /** `consumes` names a node or module that is not in the file. */
  'unknown-provider',
  /** The top-level `modules` names a module no node of the file is assigned. */
  'unknown-module',
  /** `consumes` names a module that provides nothing. */
  'not-a-provider',
  /** A module that consumes itself. */
  'self-consumption',
  /** A module given two provider kinds (in the file, or against the live mesh). */
  'provider-kind-conflict',
  /** A node over one of its limits (lib/server/core/mesh/limits.ts). */
  'limit-exceeded',
  /** A test that is not well-formed (a bad glob, not one subject and one assertion). */
  'bad-test',
  /** A test the mesh fails. */
  'test-failed',
] as const;

export type ProblemCode = (typeof problemCodes)[number];

/** One problem of a file, where it is: line and column are 1-based, `path` names the field. */
export type MeshFileProblem = {
  readonly line: number;
  readonly column: number;
  /** The field, dotted: `nodes.web-1.modules.nginx.consumes[0]`; empty for the whole file. */
  readonly path: string;
  readonly message: string;
  readonly code: ProblemCode;
};

/** A place in the file, by path; `key` points at a map entry's key rather than its value. */
export type Locate = (path: readonly (string | number)[], key?: boolean) => { line: number; column: number };

/** Joins a path as problems print it. */
export const pathText = (path: readonly (string | number)[]) =>
  path.reduce<string>(
    (text, segment) =>
      typeof segment === 'number' ? `${text}[${segment}]` : text ? `${text}.${segment}` : segment,
    '',
  );

/** Builds problems against one file's locations. */
export const problemAt =
  (locate: Locate) =>
  (code: ProblemCode, path: readonly (string | number)[], message: string, key = false): MeshFileProblem => ({
    ...locate(path, key),
    path: pathText(path),
    message,
    code,
  });

/** Problems in file order, each once: the same line and message found twice is one problem. */
export function sortProblems(problems: readonly MeshFileProblem[]): MeshFileProblem[] {
  const seen = new Set<string>();
  return [...problems]
    .sort((a, b) => a.line - b.line || a.column - b.column || (a.message < b.message ? -1 : 1))
    .filter((problem) => {
      const key = `${problem.line}:${problem.column}:${problem.code}:${problem.message}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
}

/** `FILE:LINE:COLUMN: message [code]`, one a line, as compilers print them. */
export const formatProblems = (problems: readonly MeshFileProblem[], file = 'mesh file') =>
  problems.map((p) => `${file}:${p.line}:${p.column}: ${p.message} [${p.code}]`).join('\n');

/**
 * The file cannot be applied as it is: every problem found, at once, and nothing written. The
 * API answers 422 with the problems, which the CLI's table makes exit 2 (an error for `mesh
 * diff` too, whose 1 means "differs").
 */
export class BadMeshFileError extends MeshError {
  override name = 'BadMeshFileError';
  readonly problems: readonly MeshFileProblem[];
  /** Problems found beyond those listed (see maxProblems in read.ts). */
  readonly omitted: number;
  constructor(problems: readonly MeshFileProblem[], omitted = 0, options?: ErrorOptions) {
    const count = problems.length + omitted;
    const more = omitted > 0 ? `\n… and ${omitted} more` : '';
    super(
      `the mesh file has ${count === 1 ? '1 problem' : `${count} problems`}:\n${formatProblems(problems)}${more}`,
      options,
    );
    this.problems = problems;
    this.omitted = omitted;
  }
}
