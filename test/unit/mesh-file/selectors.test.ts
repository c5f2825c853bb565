import { describe, expect, it } from 'vitest';
import {
  BadSelectorError,
  matchesSelector,
  parseSelector,
  selectorText,
} from '../../../lib/server/core/mesh-file/index.ts';

describe('label selectors', () => {
  const web = { role: 'web', zone: 'a' };
  const db = { role: 'db' };
  const bare = {};

  it.each([
    ['role=web', [true, false, false]],
    ['role=web,zone=a', [true, false, false]],
    ['role=web,zone=b', [false, false, false]],
    ['role!=db', [true, false, true]],
    ['zone', [true, false, false]],
    ['!zone', [false, true, true]],
    [' role=web ', [true, false, false]],
  ] as const)('%s picks the nodes it names', (text, expected) => {
    const selector = parseSelector(text);
    expect([web, db, bare].map((labels) => matchesSelector(selector, labels))).toEqual(expected);
  });

  it.each([
    ['', 'empty requirement'],
    ['role=web,', 'empty requirement'],
    ['Role=web', 'a label key'],
    ['role=', 'a label value'],
    ['role=we b', 'a label value'],
    ['!role=web', '! goes before a key alone'],
    ['role==web', 'a label value'],
  ])('refuses %j, saying why', (text, why) => {
    expect(() => parseSelector(text)).toThrow(BadSelectorError);
    expect(() => parseSelector(text)).toThrow(why);
  });

  it('writes a selector back in one order', () => {
    expect(selectorText(parseSelector('zone=a,!gone,role!=db,tier'))).toBe('!gone,role!=db,tier,zone=a');
  });

  it('does not take a label from the object prototype', () => {
    expect(matchesSelector(parseSelector('constructor'), {})).toBe(false);
  });
});
