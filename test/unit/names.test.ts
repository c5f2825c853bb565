import { describe, expect, it } from 'vitest';
import { moduleName, nodeName } from '../../lib/server/core/names.ts';

/** Node and module names are DNS labels (RFC 1123): hosts and resource names are made from them. */
describe('node and module names', () => {
  const valid = ['a', 'web1', 'app-web', 'a'.repeat(63), `a${'-'.repeat(61)}b`];
  const invalid = ['', 'web-', 'a-', '-web', '1web', 'Web', 'web_1', 'web.1', 'a'.repeat(64), 'wéb'];

  it.each([
    ['node', nodeName],
    ['module', moduleName],
  ] as const)('a %s name is a DNS label, which never ends with a hyphen', (_, schema) => {
    expect(valid.filter((name) => !schema.safeParse(name).success)).toEqual([]);
    expect(invalid.filter((name) => schema.safeParse(name).success)).toEqual([]);
  });

  it('says the rule when it refuses', () => {
    const refused = nodeName.safeParse('web-');
    expect(refused.error?.issues[0]?.message).toBe(
      'a node name must be a DNS label: a lowercase letter, then up to 62 lowercase letters, digits or hyphens, not ending with a hyphen',
    );
  });
});
