import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileAgentState } from '../../lib/host/agent/file-state.ts';
import { ShellApplier } from '../../lib/host/agent/shell-applier.ts';

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

  it('starts from nothing when there is no state yet', async () => {
    expect(await new FileAgentState(scratch()).load()).toEqual({ lastSequence: 0 });
  });
});
