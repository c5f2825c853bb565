import type { PolicyDocument } from './iam-policies.ts';

const leadingKeys = 'dynamodb:leadingkeys';

/**
 * The patterns the policies test partition keys against, when every test of
 * `dynamodb:LeadingKeys` is `ForAllValues:StringLike` with literal patterns; else undefined.
 */
export function leadingKeyPatterns(documents: readonly PolicyDocument[]): string[] | undefined {
  const patterns = new Set<string>();
  for (const document of documents)
    for (const statement of document.Statement)
      for (const [operator, operands] of Object.entries(statement.Condition ?? {}))
        for (const [key, value] of Object.entries(operands as Record<string, unknown>)) {
          if (key.toLowerCase() !== leadingKeys) continue;
          if (operator.toLowerCase() !== 'forallvalues:stringlike') return undefined;
          for (const pattern of [value].flat()) {
            if (typeof pattern !== 'string' || pattern.includes('${')) return undefined;
            patterns.add(pattern);
          }
        }
  return [...patterns];
}

const globRegex = (pattern: string, flags: string) =>
  new RegExp(
    `^${pattern
      .split('')
      .map((char) => (char === '*' ? '.*' : char === '?' ? '.' : char.replace(/[\\^$.|+()[\]{}]/g, '\\$&')))
      .join('')}$`,
    flags,
  );

/**
 * Stands each partition key a request names for the first key seen that matches exactly the same
 * patterns (case-sensitively and not): under `ForAllValues:StringLike` tests of those patterns
 * alone, two such keys are allowed or denied alike. So the judge asks IAM's evaluator once per kind
 * of key (`node#web-00001` and `node#web-00002` are one kind), not once per node of a run, and each
 * question it asks is still one a function really made.
 */
export class LeadingKeyKinds {
  readonly #matchers: Array<[RegExp, RegExp]>;
  readonly #first = new Map<string, string>();

  constructor(patterns: readonly string[]) {
    this.#matchers = patterns.map((pattern) => [globRegex(pattern, ''), globRegex(pattern, 'i')]);
  }

  /** The key that stands for `key`: itself, or an earlier one of its kind. */
  standIn(key: string): string {
    const kind = this.#matchers.map(([exact, folded]) => `${+exact.test(key)}${+folded.test(key)}`).join('');
    const first = this.#first.get(kind);
    if (first !== undefined) return first;
    this.#first.set(kind, key);
    return key;
  }
}
