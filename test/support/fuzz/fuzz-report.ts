import type { FuzzFailure } from './fuzz-run.ts';

/** One broken rule for a person: the case, the answer, what it wrote, what was logged, and how to send it again. */
export function describeFailure(failure: FuzzFailure): string {
  const { fuzzCase, change } = failure;
  const wrote = change
    ? [
        ...change.added.map((key) => `    + ${key}`),
        ...change.removed.map((key) => `    - ${key}`),
        ...change.changed.map((key) => `    ~ ${key}`),
      ]
    : [];
  return [
    `${failure.rule}: ${fuzzCase.route}, ${fuzzCase.kind}`,
    `  ${fuzzCase.method} ${fuzzCase.path.slice(0, 200)} -> ${failure.status ?? 'no answer'} ${failure.answer.slice(0, 200)}`,
    ...(wrote.length > 0 ? ['  wrote:', ...wrote.slice(0, 10)] : []),
    ...(failure.logged ? [`  logged: ${failure.logged.split('\n').slice(0, 4).join('\n    ')}`] : []),
    `  again: ${failure.reproduction}`,
  ].join('\n');
}

/** A class of failures: the first case, how many there were and on which routes. */
export type FailureClass = { readonly first: FuzzFailure; count: number; readonly routes: Set<string> };

/**
 * Failures grouped by rule and what was done, the values left out (`query: constructor=1` and
 * `query: constructor=x` are one class), each with its first case, its count and its routes.
 */
export function failureClasses(failures: readonly FuzzFailure[]): FailureClass[] {
  const classes = new Map<string, FailureClass>();
  for (const failure of failures) {
    const what = failure.fuzzCase.kind.replace(/=.*$|"[^"]*"|\d+/g, '…');
    const key = `${failure.rule} ${what}`;
    const known = classes.get(key) ?? { first: failure, count: 0, routes: new Set<string>() };
    known.count += 1;
    known.routes.add(failure.fuzzCase.route);
    classes.set(key, known);
  }
  return [...classes.values()];
}

/** A class for a person: its first case in full, then how many and where. */
export const describeClass = (failureClass: FailureClass): string =>
  `${describeFailure(failureClass.first)}\n  (${failureClass.count} case${failureClass.count === 1 ? '' : 's'} like it, on ${[...failureClass.routes].sort().join(', ')})`;
