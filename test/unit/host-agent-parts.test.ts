import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileAgentState } from '../../lib/clients/host/agent/file-state.ts';
import { ShellApplier, ShellHealthCheck } from '../../lib/clients/host/agent/shell-applier.ts';

const scratch = () => mkdtempSync(join(tmpdir(), 'mesh-host-'));

describe('ShellApplier', () => {
  it('runs the command with the declaration path, revision and node in its environment', async () => {
    const dir = scratch();
    const out = join(dir, 'seen');
    const applier = new ShellApplier(
      `echo "$MESH_DECLARATION $MESH_REVISION $MESH_NODE" > ${out}`,
      'app',
      () => undefined,
    );

    const result = await applier.apply('/tmp/declaration.json', 7, new AbortController().signal);

    expect(result).toEqual({ ok: true });
    expect(readFileSync(out, 'utf8')).toBe('/tmp/declaration.json 7 app\n');
  });

  it('reports a failing command with its exit code', async () => {
    const result = await new ShellApplier('exit 3', 'app', () => undefined).apply(
      '/x',
      1,
      new AbortController().signal,
    );

    expect(result).toEqual({ ok: false, reason: 'the apply command exited 3' });
  });

  it('stops the command when the agent is told to stop', async () => {
    const controller = new AbortController();
    const running = new ShellApplier('sleep 30', 'app', () => undefined).apply('/x', 1, controller.signal);

    controller.abort();

    expect(await running).toEqual({ ok: false, reason: 'the apply command was stopped by SIGTERM' });
  });

  it('keeps the end of what the command wrote on stderr, not stdout, for the report', async () => {
    const printed: string[] = [];
    const result = await new ShellApplier(
      'echo to-stdout; echo first >&2; echo "failed: disk full" >&2; exit 4',
      'app',
      (chunk) => printed.push(chunk.toString()),
    ).apply('/x', 1, new AbortController().signal);

    expect(result).toEqual({
      ok: false,
      reason: 'the apply command exited 4',
      output: 'first\nfailed: disk full\n',
    });
    expect(printed.join('')).toContain('to-stdout');
  });

  it('ends when the command exits, though something it started in the background holds its output open', async () => {
    const started = Date.now();
    const result = await new ShellApplier('sleep 5 & echo started', 'app', () => undefined).apply(
      '/x',
      1,
      new AbortController().signal,
    );

    expect(result.ok).toBe(true);
    expect(Date.now() - started).toBeLessThan(4_000);
  });
});

describe('ShellHealthCheck', () => {
  it('is healthy when the check exits 0, with the environment the apply command has; keeps both streams', async () => {
    const check = new ShellHealthCheck(
      'echo "$MESH_DECLARATION $MESH_REVISION $MESH_NODE"; echo warn >&2',
      'app',
      5_000,
    );

    expect(await check.check('/d.json', 4, new AbortController().signal)).toEqual({
      healthy: true,
      reason: 'the check exited 0',
      output: '/d.json 4 app\nwarn\n',
    });
  });

  it('is unhealthy when it exits otherwise, or runs past its time (stopped)', async () => {
    const failing = await new ShellHealthCheck('echo refused; exit 7', 'app', 5_000).check(
      '/d',
      1,
      new AbortController().signal,
    );
    const started = Date.now();
    const slow = await new ShellHealthCheck('sleep 20', 'app', 300).check(
      '/d',
      1,
      new AbortController().signal,
    );

    expect(failing).toEqual({ healthy: false, reason: 'the check exited 7', output: 'refused\n' });
    expect(slow).toMatchObject({ healthy: false, reason: 'the check ran past 0.3 s and was stopped' });
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

describe('FileAgentState', () => {
  it('keeps state and the declaration owner-only, leaving no temporary files behind', async () => {
    const dir = scratch();
    const state = new FileAgentState(dir);

    const path = await state.writeDeclaration('{"node":"app"}\n');
    await state.save({ lastSequence: 12, appliedEtag: '"e"', appliedRevision: 3 });

    expect(await new FileAgentState(dir).load()).toEqual({
      lastSequence: 12,
      appliedEtag: '"e"',
      appliedRevision: 3,
    });
    expect(readFileSync(path, 'utf8')).toBe('{"node":"app"}\n');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir).sort()).toEqual(['agent-state.json', 'declaration.json']);
  });

  it('keeps the last good declaration whole, owner-only, and the revision given up in its state', async () => {
    const dir = scratch();
    const state = new FileAgentState(dir);

    expect(await state.lastGood()).toBeUndefined();
    expect(await state.readDeclaration()).toEqual({ path: join(dir, 'declaration.json'), body: undefined });
    await state.keepGood({ revision: 3, etag: '"r3"', body: '{"secret":"s3"}' });
    await state.keepGood({ revision: 4, etag: '"r4"', body: '{"secret":"s4"}' });
    await state.save({ lastSequence: 1, revertedEtag: '"r5"' });
    const written = await state.writeDeclaration('{"r":5}');

    expect(await new FileAgentState(dir).lastGood()).toEqual({
      revision: 4,
      etag: '"r4"',
      body: '{"secret":"s4"}',
    });
    expect(await new FileAgentState(dir).load()).toEqual({ lastSequence: 1, revertedEtag: '"r5"' });
    expect(await new FileAgentState(dir).readDeclaration()).toEqual({ path: written, body: '{"r":5}' });
    expect(statSync(join(dir, 'last-good.json')).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir).sort()).toEqual(['agent-state.json', 'declaration.json', 'last-good.json']);
  });

  it('starts from nothing when there is no state yet', async () => {
    expect(await new FileAgentState(scratch()).load()).toEqual({ lastSequence: 0 });
  });
});
