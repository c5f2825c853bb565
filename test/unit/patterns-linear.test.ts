import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { viewQueryOf } from '../../lib/server/api/view-query.ts';
import { type GlobMeter, glob } from '../../lib/server/core/glob.ts';
import { checkMeshFile, globMatcher, parseSelector } from '../../lib/server/core/mesh-file/index.ts';
import { expandPattern } from '../../lib/server/core/mesh-file/ranges.ts';
import { maxFileTests, maxPatternStars } from '../../lib/server/core/mesh-file/schema.ts';
import { policyAllows } from '../../lib/server/core/signal/policy.ts';

/**
 * Issue 36, finding 3: no input reachable by any role costs more than linear time in its size.
 * Every pattern-like input is here: the mesh file's test patterns (`POST /mesh/plan`, a viewer's),
 * IoT's policy globs (the broker's authorizer, on every topic a host names), label selectors
 * (`?on=` of the views), node ranges (a group's `nodes`). Speed is not timed: the matcher counts
 * the characters it compares (GlobMeter), and that count is held to a small multiple of the
 * text and the pattern, where a backtracking regular expression needs a power of the text.
 */

/** The meaning of a glob, by brute force on small inputs: what the matcher must agree with. */
function reference(pattern: string, text: string, options: { star?: RegExp; question?: boolean }): boolean {
  const source = [...pattern]
    .map((char) =>
      char === '*'
        ? `${options.star?.source ?? '[^]'}*`
        : char === '?' && options.question
          ? '[^]'
          : char.replace(/[\\^$.|+()[\]{}?*]/g, '\\$&'),
    )
    .join('');
  return new RegExp(`^${source}$`).test(text);
}

const metered = (pattern: string, text: string, options: Parameters<typeof glob>[1] = {}) => {
  const meter: GlobMeter = { steps: 0 };
  const matched = glob(pattern, options).test(text, meter);
  return { matched, steps: meter.steps };
};

describe('glob patterns are matched without backtracking', () => {
  it('agree with the regular expression they stand for, on any pattern and text', () => {
    const alphabet = fc.constantFrom('a', 'b', '-', '.');
    fc.assert(
      fc.property(
        fc.string({ unit: fc.oneof(alphabet, fc.constantFrom('*', '?')), maxLength: 8 }),
        fc.string({ unit: alphabet, maxLength: 12 }),
        fc.boolean(),
        (pattern, text, question) => {
          const named = { star: /[a-z0-9-]/, question };
          const nameChar = (char: string) => /^[a-z0-9-]$/.test(char);
          expect(glob(pattern, { question }).test(text)).toBe(reference(pattern, text, { question }));
          if (!question)
            expect(glob(pattern, { star: nameChar }).test(text)).toBe(reference(pattern, text, named));
        },
      ),
      { numRuns: 20000 },
    );
  });

  it('take `?` only where a star may stand for anything, where the leftmost place is always the best', () => {
    expect(() => glob('a?*', { star: (char) => char !== '/', question: true })).toThrow(/\?/);
  });

  it('compare at most about three times the text and the pattern, however many stars', () => {
    for (const stars of [1, 4, 8, 16, 32])
      for (const length of [50, 500, 5_000, 50_000]) {
        const pattern = `${'a*'.repeat(stars)}b`;
        const text = 'a'.repeat(length);
        const { matched, steps } = metered(pattern, text);
        expect(matched).toBe(false);
        expect({ stars, length, bounded: steps <= 3 * (length + pattern.length) }).toEqual({
          stars,
          length,
          bounded: true,
        });
      }
  });

  it('stay linear on the texts that hurt a naive search most (a piece that almost matches everywhere)', () => {
    for (const length of [1_000, 10_000, 100_000]) {
      const piece = `${'a'.repeat(40)}b`;
      const { steps } = metered(`x*${piece}*y`, `x${'a'.repeat(length)}y`);
      expect(steps).toBeLessThanOrEqual(3 * (length + piece.length + 4));
    }
  });
});

describe('the mesh file’s test patterns (POST /mesh/plan, a viewer’s route)', () => {
  const fileWith = (node: string, consumer: string) =>
    [
      'version: 1',
      'nodes:',
      `  ${node}:`,
      '    modules:',
      '      x:',
      '        consumes: [broker/rabbit]',
      '  broker:',
      '    modules: {rabbit: {provides: amqp}}',
      'tests:',
      `  - {consumer: "${consumer}", reaches: broker/rabbit}`,
    ].join('\n');

  it('refuses the 300-byte file of the run (eight stars) as a bad test, and plans it with four', () => {
    const node = 'a'.repeat(50);
    const eight = checkMeshFile(fileWith(node, 'a*a*a*a*a*a*a*a*b/x'));
    expect(eight.problems.map((p) => [p.code, p.path])).toEqual([['bad-test', 'tests[0].consumer']]);
    const four = checkMeshFile(fileWith(node, 'a*a*a*a*b/x'));
    expect(four.problems.map((p) => p.message)).toEqual([
      'test failed: a*a*a*a*b/x reaches broker/rabbit: it matches nothing',
    ]);
  });

  it('matches a name against the worst pattern the schema takes in a few hundred comparisons', () => {
    const worst = `${'a*'.repeat(maxPatternStars)}${'a'.repeat(63 - 2 * maxPatternStars - 1)}b`;
    expect(worst.length).toBe(63);
    const meter: GlobMeter = { steps: 0 };
    expect(globMatcher(worst)('a'.repeat(63), meter)).toBe(false);
    // counted: the file's tests go through the metered matcher, not a regular expression
    expect(meter.steps).toBeGreaterThan(0);
    expect(meter.steps).toBeLessThanOrEqual(3 * (63 + 63));
    const long = { steps: 0 };
    expect(globMatcher(`${'a*'.repeat(32)}b/x`.split('/')[0] as string)('a'.repeat(100_000), long)).toBe(
      false,
    );
    expect(long.steps).toBeLessThanOrEqual(3 * (100_000 + 65));
  });

  it('bounds a pattern’s length and stars, and a file’s tests, naming each as a bad test', () => {
    const tooLong = `${'a'.repeat(64)}/x`;
    const tooStarry = `${'*a'.repeat(maxPatternStars + 1)}/x`;
    for (const pattern of [tooLong, tooStarry]) {
      const checked = checkMeshFile(fileWith('web', pattern));
      expect({ pattern, codes: checked.problems.map((p) => p.code) }).toEqual({
        pattern,
        codes: ['bad-test'],
      });
    }
    const many = `${fileWith('web', 'web/x')}\n${'  - {consumer: "web/x", reaches: broker/rabbit}\n'.repeat(maxFileTests)}`;
    expect(checkMeshFile(many).problems.map((p) => [p.code, p.path])).toEqual([['bad-test', 'tests']]);
  });
});

describe('the other pattern-like inputs', () => {
  it('IoT policy globs (the broker’s authorizer) compare linearly in the topic a host names', () => {
    const document = {
      Version: '2012-10-17' as const,
      Statement: [{ Effect: 'Allow' as const, Action: 'iot:Subscribe', Resource: 'arn:*:*:*:*:*a?*a?*a?*b' }],
    };
    for (const length of [100, 10_000]) {
      const topic = `arn:aws:iot:eu:1:topicfilter/${'a'.repeat(length)}`;
      expect(policyAllows([document], 'iot:Subscribe', topic)).toBe(false);
      const { steps } = metered('arn:*:*:*:*:*a?*a?*a?*b', topic, { question: true });
      expect(steps).toBeLessThanOrEqual(3 * (topic.length + 30));
    }
  });

  it('label selectors are at most 512 characters on the views, parsed in one pass each requirement', () => {
    const event = (on: string) =>
      ({ queryStringParameters: { on } }) as unknown as Parameters<typeof viewQueryOf>[0];
    expect(() => viewQueryOf(event(`${'a'.repeat(512)}!`))).toThrow(/on/);
    expect(() => viewQueryOf(event('a'.repeat(513)))).toThrow(/on/);
    const many = Array.from({ length: 100 }, (_, i) => `k${i}=v`).join(',');
    expect(parseSelector(many)).toHaveLength(100);
    for (const hostile of [`${'a'.repeat(500)}!`, `${'!'.repeat(500)}`, `${'a='.repeat(250)}`])
      expect(() => parseSelector(hostile)).toThrow();
  });

  it('node ranges are counted before any name is made: a pattern of a billion nodes costs its own length', () => {
    const huge = `web${'-[1-999]'.repeat(20)}`;
    const expanded = expandPattern(huge, 100_000);
    expect('error' in expanded && expanded.count).toBeGreaterThan(100_000);
  });
});
