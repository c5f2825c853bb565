import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { runtimeLog } from '../../lib/local/runtime-log.ts';

const collecting = () => {
  let text = '';
  const stream = new Writable({
    write(chunk, _encoding, done) {
      text += chunk;
      done();
    },
  });
  return { stream, text: () => text };
};

describe("npm start's log lines, in its documented text format by default", () => {
  it('prints a line for people with the cause, no JSON and no stack, at INFO', () => {
    const out = collecting();
    const log = runtimeLog('text', 'INFO', out.stream);
    const refused = new Error('no node named ghost');
    log.warn('presence of ghost not recorded', { code: 'broker.presence-not-recorded', error: refused });
    log.info('a message', { code: 'x' });
    expect(out.text()).toBe('mesh: presence of ghost not recorded: no node named ghost\nmesh: a message\n');
  });

  it('keeps a stack for MESH_LOG_LEVEL=DEBUG, and drops what is under the level', () => {
    const debug = collecting();
    runtimeLog('text', 'DEBUG', debug.stream).error('failed', { error: new Error('boom') });
    expect(debug.text()).toMatch(/^mesh: failed: boom\nError: boom\n\s+at /);
    const quiet = collecting();
    runtimeLog('text', 'WARN', quiet.stream).info('not shown');
    expect(quiet.text()).toBe('');
  });
});
