import { describe, expect, it } from 'vitest';
import { newToken } from '../../lib/server/core/enrolment/token.ts';
import { holdsToken, tokenOnCommandLine, watch, withTokensBlanked } from '../support/processes.ts';

/**
 * Every process a bed or a test starts goes through `watch` (test/support/processes.ts), which
 * refuses a command line that holds a token: a command line is read by every user of the
 * machine, and it lands in a bed's dump.
 */
describe('a token on a command line', () => {
  const { token } = newToken();
  const secret = token.split('_')[2] as string;

  it('is found as --token VALUE, --token=VALUE, or a token in any word; --token-file is not one', () => {
    expect(tokenOnCommandLine(['enrol', '--node', 'a', '--token', 'mesh_nope'])).toBe(
      '--token and a value at argument 3',
    );
    expect(tokenOnCommandLine(['enrol', `--token=${token}`])).toBe('--token=… at argument 1');
    expect(tokenOnCommandLine(['sh', '-c', `MESH_TOKEN=${token} mesh-host enrol`])).toBe(
      'a token at argument 2',
    );
    expect(tokenOnCommandLine(['enrol', '--node', 'a', '--token-file', '/tmp/a.token', '--dir', 'd'])).toBe(
      undefined,
    );
  });

  it('makes watch refuse to start the process, naming the place and never the token', () => {
    const refused = () => watch(process.execPath, ['bin/mesh-host.ts', 'enrol', '--token', token]);

    expect(refused).toThrow('--token and a value at argument 3 puts a token on its command line');
    expect(refused).not.toThrow(secret);
  });

  it('is blanked in kept output, and seen there', () => {
    const said = `issued ${token} for web-1`;

    expect(holdsToken(said)).toBe(true);
    expect(withTokensBlanked(said)).not.toContain(secret);
    expect(holdsToken(withTokensBlanked(said))).toBe(false);
    expect(holdsToken('enrolled web-1; token id AAAAAAAAAAAA')).toBe(false);
  });
});
