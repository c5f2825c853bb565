import { type GlobMeter, glob } from '../glob.ts';
import type { Labels } from '../mesh/labels.ts';
import type { Relation } from '../mesh/model.ts';
import type { MeshNode } from './mesh.ts';
import { type Locate, type MeshFileProblem, problemAt } from './problems.ts';
import { type FileTest, modulePattern } from './schema.ts';

/**
 * The file's tests (Tailscale's policy tests, for a mesh): each names who it is about (the
 * modules matching `consumer`, or the nodes carrying `label`) and what must hold of them (each
 * `reaches` a provider matching a pattern, or `mustNotConsume` any). A test about nobody fails:
 * a pattern that matches nothing is a typo more often than a truth.
 */

const isNameChar = (char: string) =>
  (char >= 'a' && char <= 'z') || (char >= '0' && char <= '9') || char === '-';

/**
 * A `*` matches any run of name characters; the rest of a pattern is literal. Matched without
 * backtracking (lib/server/core/glob.ts): a test costs O(name + pattern) however many stars it has,
 * and the schema bounds both (modulePattern).
 */
export function globMatcher(pattern: string): (text: string, meter?: GlobMeter) => boolean {
  const matcher = glob(pattern, { star: isNameChar });
  return (text, meter) => matcher.test(text, meter);
}

/** `NODE/MODULE` as two matchers, so a node that does not match is skipped with its modules. */
function pathMatcher(pattern: string) {
  const [node = '', module = ''] = pattern.split('/');
  return { node: globMatcher(node), module: globMatcher(module) };
}

const matchesProvider = (pattern: ReturnType<typeof pathMatcher>) => (relation: Relation) =>
  pattern.node(relation.providerNode) && pattern.module(relation.providerModule);

export const hasLabels = (wanted: Labels, labels: Labels) =>
  Object.entries(wanted).every(([key, value]) => labels[key] === value);

/** Names at most this many of the consumers that break a test, and counts the rest. */
const namedAtMost = 10;

/** One test of the file as a plan reports it: what it says, and whether it holds on the mesh checked. */
export type TestOutcome = { readonly test: string; readonly passed: boolean };

/** The file's tests on a mesh: a problem for each that fails, and every well-formed test's outcome, passed or not. */
export function runTests(
  tests: readonly FileTest[],
  nodes: readonly MeshNode[],
  locate: Locate,
): { problems: MeshFileProblem[]; outcomes: TestOutcome[] } {
  const problem = problemAt(locate);
  const problems: MeshFileProblem[] = [];
  const outcomes: TestOutcome[] = [];
  for (const [i, test] of tests.entries()) {
    const path = ['tests', i];
    const subjects = [test.consumer, test.label].filter((x) => x !== undefined).length;
    const assertions = [test.reaches, test.mustNotConsume].filter((x) => x !== undefined).length;
    if (subjects !== 1 || assertions !== 1) {
      problems.push(
        problem(
          'bad-test',
          path,
          'a test has one of consumer or label, and one of reaches or mustNotConsume',
        ),
      );
      continue;
    }
    // A pattern the schema refused is reported there; the test is not run on it.
    const patterns = [test.consumer, test.reaches, test.mustNotConsume].filter((p) => p !== undefined);
    if (!patterns.every((pattern) => modulePattern.safeParse(pattern).success)) continue;
    const failing = failingSubjects(test, nodes);
    outcomes.push({ test: describe(test), passed: failing !== undefined && failing.length === 0 });
    if (failing === undefined) {
      problems.push(problem('test-failed', path, `test failed: ${describe(test)}: it matches nothing`));
    } else if (failing.length > 0) {
      const named = failing.slice(0, namedAtMost).join(', ');
      const more = failing.length > namedAtMost ? ` and ${failing.length - namedAtMost} more` : '';
      problems.push(
        problem('test-failed', path, `test failed: ${describe(test)}: not so for ${named}${more}`),
      );
    }
  }
  return { problems, outcomes };
}

export const checkTests = (tests: readonly FileTest[], nodes: readonly MeshNode[], locate: Locate) =>
  runTests(tests, nodes, locate).problems;

const describe = (test: FileTest) => {
  const subject =
    test.consumer ??
    `nodes labelled ${Object.entries(test.label ?? {})
      .map(([k, v]) => `${k}=${v}`)
      .join(',')}`;
  return test.reaches
    ? `${subject} reaches ${test.reaches}`
    : `${subject} must not consume ${test.mustNotConsume}`;
};

/** The subjects the test fails for, in mesh order; undefined when it is about nobody. */
function failingSubjects(test: FileTest, nodes: readonly MeshNode[]): string[] | undefined {
  const assertion = pathMatcher(test.reaches ?? test.mustNotConsume ?? '');
  const holds = (relations: readonly Relation[]) =>
    test.reaches ? relations.some(matchesProvider(assertion)) : !relations.some(matchesProvider(assertion));
  const failing: string[] = [];
  let subjects = 0;
  if (test.label) {
    for (const node of nodes) {
      if (!hasLabels(test.label, node.labels)) continue;
      subjects += 1;
      if (!holds(node.relations)) failing.push(node.node);
    }
  } else {
    const consumer = pathMatcher(test.consumer ?? '');
    for (const node of nodes) {
      if (!consumer.node(node.node)) continue;
      for (const { module } of node.assignments) {
        if (!consumer.module(module)) continue;
        subjects += 1;
        if (!holds(node.relations.filter((r) => r.consumerModule === module)))
          failing.push(`${node.node}/${module}`);
      }
    }
  }
  return subjects === 0 ? undefined : failing;
}
