import { isMap, isNode, isScalar, isSeq, LineCounter, type Node, type Pair } from 'yaml';
import type * as z from 'zod';
import { type Locate, type MeshFileProblem, type ProblemCode, pathText, problemAt } from './problems.ts';
import { groupEntry, type MeshFile, meshFileSchema, moduleEntry, nodeEntry } from './schema.ts';
import { documentOf, maxFileDepth } from './yaml-document.ts';

/** JSON is YAML, so one parser reads both; the format matters only to what export writes. */
export type MeshFileFormat = 'yaml' | 'json';

export const formatOf = (text: string): MeshFileFormat => (/^\s*[{[]/.test(text) ? 'json' : 'yaml');

/** What reading a file gives: the file when its structure holds, and every problem found. */
export type SourceFile = {
  readonly format: MeshFileFormat;
  /** Undefined when the structure is too broken to check further (the problems say why). */
  readonly file: MeshFile | undefined;
  readonly problems: readonly MeshFileProblem[];
  readonly locate: Locate;
};

/** Aliases are YAML's; a file that expands one alias a hundred times is an attack, not a mesh. */
const maxAliasCount = 100;

/** Parses the text and checks it against the schema, mapping each problem to its line and column. */
export function readSource(text: string, maxBytes: number): SourceFile {
  const format = formatOf(text);
  const whole: Locate = () => ({ line: 1, column: 1 });
  const bytes = Buffer.byteLength(text);
  if (bytes > maxBytes) {
    const message = `the file is ${bytes} bytes, over the ${maxBytes} a mesh file may be`;
    return { format, file: undefined, problems: [problemAt(whole)('too-large', [], message)], locate: whole };
  }
  const lineCounter = new LineCounter();
  const read = documentOf(text, lineCounter);
  const at = (offset: number) => {
    const { line, col } = lineCounter.linePos(offset);
    return { line, column: col };
  };
  if ('tooDeep' in read) {
    const message = `the file nests deeper than the ${maxFileDepth} levels a mesh file may (its deepest field is 6 down): ${read.tooDeep.depth} levels at least`;
    const here = () => at(read.tooDeep.offset);
    return { format, file: undefined, problems: [problemAt(here)('too-deep', [], message)], locate: here };
  }
  const { doc } = read;
  const locate = locator(doc.contents as Node | null, at);
  const problem = problemAt(locate);
  if (doc.errors.length > 0) {
    const problems = doc.errors.map((error) => ({
      ...at(error.pos[0]),
      path: '',
      message: error.message.split('\n')[0] ?? error.message,
      code: 'syntax' as const,
    }));
    return { format, file: undefined, problems, locate };
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount });
  } catch (error) {
    return { format, file: undefined, problems: [problem('syntax', [], (error as Error).message)], locate };
  }
  // Nothing in it, or not a map at all: the schema's own words ("expected object, received
  // null") would not tell a person that the file is empty
  if (value === null || value === undefined || typeof value !== 'object' || Array.isArray(value)) {
    const what =
      value === null || value === undefined
        ? 'the file is empty'
        : `the file is ${Array.isArray(value) ? 'a list' : `a ${typeof value}`}`;
    const message = `${what}: a mesh file is a map, starting with version: 1, then nodes, groups and tests (docs/mesh-file.md)`;
    return { format, file: undefined, problems: [problem('invalid', [], message)], locate };
  }
  const duplicates = duplicateKeys(doc.contents, at);
  const checked = meshFileSchema.safeParse(value);
  if (checked.success) return { format, file: checked.data, problems: duplicates, locate };
  const issues = withUnderBadKeys(checked.error.issues, value);
  const problems = [...duplicates, ...issues.flatMap((issue) => problemsOf(issue, problem))];
  // Names, kinds and labels in the wrong format leave the structure whole: the checks across
  // fields still run, so the file's other problems are reported with these.
  const usable = issues.every(
    (issue) =>
      formatOnly.has(issue.code) || (issue.code === 'invalid_type' && issue.path.at(-2) === 'labels'),
  );
  return { format, file: usable ? (value as MeshFile) : undefined, problems, locate };
}

const formatOnly = new Set(['invalid_key', 'invalid_format', 'unrecognized_keys', 'invalid_value']);

type Problem = ReturnType<typeof problemAt>;

/** No field of a mesh file is deeper than this; below it nothing is walked. */
const deepestField = 8;

/**
 * Keys given twice in one map, the later one reported (it is the one kept). The parser's own
 * check compares each key with every key before it, seconds at 10,000 nodes, so the file is
 * parsed without it and checked here in one pass.
 */
function duplicateKeys(
  root: unknown,
  at: (offset: number) => { line: number; column: number },
): MeshFileProblem[] {
  const problems: MeshFileProblem[] = [];
  const walk = (node: unknown, path: readonly (string | number)[]) => {
    if (path.length > deepestField) return;
    if (isSeq(node)) for (const [i, item] of node.items.entries()) walk(item, [...path, i]);
    if (!isMap(node)) return;
    const seen = new Set<string>();
    for (const pair of node.items) {
      if (!isScalar(pair.key)) continue;
      const key = String(pair.key.value);
      const here = [...path, key];
      if (seen.has(key)) {
        const nodes = path.length === 1 && path[0] === 'nodes';
        problems.push({
          ...at(pair.key.range?.[0] ?? 0),
          path: pathText(here),
          message: nodes ? `node ${key} is defined twice in nodes` : `${key} is given twice here`,
          code: nodes ? 'duplicate-node' : 'duplicate-key',
        });
      }
      seen.add(key);
      walk(pair.value, here);
    }
  };
  walk(root, []);
  return problems;
}
type Issue = z.core.$ZodIssue;

/**
 * A record whose key is refused leaves its value unchecked; a node named `Web-1` may also have
 * a misspelt field, and both are reported at once, so the value is checked on its own.
 */
function withUnderBadKeys(issues: readonly Issue[], value: unknown): Issue[] {
  const all: Issue[] = [];
  for (const issue of issues) {
    all.push(issue);
    if (issue.code !== 'invalid_key') continue;
    const schema = entrySchemaAt(issue.path);
    if (!schema) continue;
    const entry = issue.path.reduce<unknown>(
      (inner, segment) => (inner as Record<PropertyKey, unknown> | null)?.[segment],
      value,
    );
    const inner = schema.safeParse(entry);
    if (!inner.success)
      all.push(...inner.error.issues.map((i) => ({ ...i, path: [...issue.path, ...i.path] })));
  }
  return all;
}

function entrySchemaAt(path: readonly PropertyKey[]): z.ZodType | undefined {
  if (path.length === 2 && path[0] === 'nodes') return nodeEntry;
  if (path.length === 2 && path[0] === 'groups') return groupEntry;
  if (path.at(-2) === 'modules') return moduleEntry;
  return undefined;
}

function problemsOf(issue: z.core.$ZodIssue, problem: Problem): MeshFileProblem[] {
  const path = issue.path.map((segment) => (typeof segment === 'symbol' ? String(segment) : segment));
  if (issue.code === 'unrecognized_keys') {
    const fields = fieldsAt(path);
    return issue.keys.map((key) =>
      problem(
        'unknown-field',
        [...path, key],
        `unknown field "${key}"${fields ? ` (here: ${fields})` : ''}`,
        true,
      ),
    );
  }
  if (issue.code === 'invalid_key') {
    const inner = issue.issues[0]?.message ?? issue.message;
    return [problem(codeAt(path, true), path, `"${String(path.at(-1))}": ${inner}`, true)];
  }
  if (path.length === 1 && path[0] === 'version')
    return [problem('bad-version', path, 'version must be 1, the only version of the mesh file')];
  if (issue.code === 'invalid_type' && path.at(-2) === 'labels')
    return [problem('bad-label', path, 'a label value is a string: quote numbers and booleans ("1")')];
  const code =
    issue.code === 'invalid_format' ? codeAt(path, false) : path[0] === 'tests' ? 'bad-test' : 'invalid';
  return [problem(code, path, issue.message)];
}

/** What a format problem is, from where it is: names are map keys, kinds and labels values. */
function codeAt(path: readonly (string | number)[], key: boolean): ProblemCode {
  const parent = path.at(-2);
  if (path[0] === 'tests') return 'bad-test';
  if (parent === 'labels') return 'bad-label';
  if (key) return 'bad-name';
  if (path.at(-1) === 'provides') return 'bad-kind';
  if (parent === 'consumes') return 'bad-reference';
  return 'invalid';
}

function fieldsAt(path: readonly (string | number)[]): string | undefined {
  const [top, , third, , fifth] = path;
  if (path.length === 0) return 'version, nodes, groups, tests';
  if (top === 'tests') return 'consumer, label, reaches, mustNotConsume';
  if (path.length === 2 && top === 'nodes') return 'labels, modules';
  if (path.length === 2 && top === 'groups') return 'nodes, labels, modules';
  if (path.length === 4 && third === 'modules' && fifth === undefined) return 'provides, consumes';
  return undefined;
}

/**
 * Finds a path in the document: the deepest node it reaches, its key when `key` is asked. Each
 * map's pairs are indexed on first use, so locating many problems in a large file stays linear.
 */
function locator(root: Node | null, at: (offset: number) => { line: number; column: number }): Locate {
  const index = new WeakMap<object, Map<string, Pair>>();
  const pairsOf = (map: { items: Pair[] }) => {
    let found = index.get(map);
    if (!found) {
      found = new Map();
      for (const pair of map.items) if (isScalar(pair.key)) found.set(String(pair.key.value), pair);
      index.set(map, found);
    }
    return found;
  };
  return (path, key = false) => {
    let node: unknown = root;
    let found: Node | null = isNode(root) ? root : null;
    for (const [i, segment] of path.entries()) {
      let keyNode: unknown;
      if (isMap(node)) {
        const pair = pairsOf(node).get(String(segment));
        if (!pair) break;
        keyNode = pair.key;
        node = pair.value;
      } else if (isSeq(node) && typeof segment === 'number' && segment < node.items.length) {
        node = node.items[segment];
      } else break;
      const wantsKey = key && i === path.length - 1;
      const here = wantsKey || !isNode(node) || !node.range ? keyNode : node;
      if (isNode(here) && here.range) found = here;
    }
    return found?.range ? at(found.range[0]) : { line: 1, column: 1 };
  };
}
