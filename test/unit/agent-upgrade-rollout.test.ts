import { describe, expect, it } from 'vitest';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { compose } from '../../lib/server/core/mesh/declaration.ts';
import type { NodeSnapshot } from '../../lib/server/core/mesh/model.ts';
import type { NodeFacts } from '../../lib/server/core/rollout/advance.ts';
import { advanceForFlow } from '../../lib/server/core/rollout/drive.ts';
import { ReleaseNotPublishedError, RolloutUndoError } from '../../lib/server/core/rollout/errors.ts';
import { originOf, rolloutRequest } from '../../lib/server/core/rollout/requests.ts';
import { Rollouts } from '../../lib/server/core/rollout/service.ts';
import { undoAsked } from '../../lib/server/core/rollout/undo.ts';
import { rolloutOptions } from '../../lib/server/core/rollout/waves.ts';
import { RecordingLog } from '../support/control-fakes.ts';
import { MemoryAgentVersions } from '../support/memory-agent-versions.ts';
import { MemoryRolloutStore } from '../support/memory-rollout-store.ts';

/**
 * `mesh agent upgrade VERSION` as a rollout (origin `agent`): each wave sets the version on its
 * nodes just before its push, so no node is behind on it before its wave; a host that refused or
 * rolled the release back reports the revision failed, which halts the rollout as any failure.
 */
describe('an agent upgrade in waves', () => {
  /**
   * `published`: each release as `VERSION` (for x64) or `VERSION/ARCH`; `arches`: the
   * architecture each node's host reports, x64 for a node not named.
   */
  function over(
    nodes: readonly string[],
    published: readonly string[] = ['0.1.0', '0.2.0'],
    arches: Readonly<Record<string, string>> = {},
  ) {
    const versions = new MemoryAgentVersions(nodes);
    for (const node of nodes) versions.arches.set(node, arches[node] ?? 'x64');
    const calls = versions.calls;
    const driven: string[] = [];
    /** What happens while a wave's versions are set, before its push and its record: one a wave. */
    const whileSetting: Array<() => Promise<unknown>> = [];
    /** Nodes a freeze holds back: a wave's push leaves them alone. */
    const frozen = new Set<string>();
    /** Each node's revision as the last wave sent it. */
    const lastSent = new Map<string, number>();
    const reports = new Map<string, NodeFacts>();
    let revision = 1;
    const store = new MemoryRolloutStore();
    const rollouts = new Rollouts({
      store,
      facts: {
        of: async (asked) =>
          new Map(
            asked.flatMap((node) => (reports.has(node) ? [[node, reports.get(node) as NodeFacts]] : [])),
          ),
        revisions: async () => new Map(),
      },
      wave: async (asked) => {
        const sent = asked.filter((node) => !frozen.has(node));
        calls.push(`push ${sent.join(' ')}`);
        revision += 1;
        for (const node of sent) lastSent.set(node, revision);
        return {
          pushed: null,
          flushed: sent.map((node) => ({ node, revision, round: 1 })),
          rounds: 1,
          behind: [],
          heldBack: asked.filter((node) => frozen.has(node)).map((node) => ({ node, by: 'freeze:all' })),
        };
      },
      setAgentVersion: async (version, sent, rollout, limit) => {
        const before = await versions.setAgentVersion(version, sent, rollout, limit);
        await whileSetting.shift()?.();
        return before;
      },
      restoreAgentVersion: (rollout, version, sent) => versions.restoreAgentVersion(rollout, version, sent),
      published: async (versions) =>
        new Map(
          versions.map((version) => [
            version,
            published.flatMap((release) => {
              const [named, arch = 'x64'] = release.split('/');
              return named === version ? [arch] : [];
            }),
          ]),
        ),
      askedOf: (asked, asking) => versions.askedOf(asked, asking),
      drive: async (record) => {
        driven.push(record.id);
      },
      behind: async () => [],
      exists: async () => true,
      now: () => new Date('2026-12-06T00:00:00Z'),
    });
    const start = () =>
      rollouts.start({
        by: localActor(),
        origin: { kind: 'agent', version: '0.2.0' },
        nodes,
        options: rolloutOptions({ waves: '1,100%' }),
      });
    /** Every host answers the revision it was sent last: applied, or failed where `fails` says. */
    const answer = (fails: (node: string, revision: number) => boolean) => {
      for (const [node, sentRevision] of lastSent)
        reports.set(node, {
          report: fails(node, sentRevision)
            ? { revision: sentRevision, state: 'failed', step: 'agent: rolled back' }
            : { revision: sentRevision, state: 'applied' },
          online: true,
          enrolled: true,
        });
    };
    return { rollouts, calls, reports, start, versions, driven, store, frozen, answer, whileSetting };
  }

  it('sets the version on each wave’s nodes just before it pushes them, wave after wave', async () => {
    const { rollouts, calls, reports, start } = over(['a', 'b', 'c']);
    const { id } = await start();
    await rollouts.step(id);
    await rollouts.step(id);
    expect(calls).toEqual(['set 0.2.0 on a', 'push a']);
    reports.set('a', { report: { revision: 2, state: 'applied' }, online: true, enrolled: true });
    await rollouts.step(id);
    await rollouts.step(id);
    expect(calls).toEqual(['set 0.2.0 on a', 'push a', 'set 0.2.0 on b c', 'push b c']);
  });

  it('halts on a host that rolled the release back, and sets the version on no later wave', async () => {
    const { rollouts, calls, reports, start } = over(['a', 'b', 'c']);
    const { id } = await start();
    await rollouts.step(id);
    await rollouts.step(id);
    reports.set('a', {
      report: {
        revision: 2,
        state: 'failed',
        step: 'agent: agent 0.2.0 was rolled back: it exited 3 before it reported',
      },
      online: true,
      enrolled: true,
    });
    const { record } = await rollouts.step(id);
    expect(record.state).toBe('halted');
    expect(record.reason).toContain('rolled back');
    await rollouts.step(id);
    expect(calls).toEqual(['set 0.2.0 on a', 'push a']);
  });

  it('is taken over, once halted, by the next agent upgrade', async () => {
    const { rollouts, reports, start } = over(['a', 'b', 'c']);
    const { id } = await start();
    await rollouts.step(id);
    await rollouts.step(id);
    reports.set('a', {
      report: { revision: 2, state: 'failed', step: 'agent: refused' },
      online: true,
      enrolled: true,
    });
    expect((await rollouts.step(id)).record.state).toBe('halted');
    const next = await rollouts.start({
      by: localActor(),
      origin: { kind: 'agent', version: '0.1.0' },
      nodes: ['a', 'b', 'c'],
      options: rolloutOptions({ waves: '100%' }),
    });
    expect((await rollouts.step(next.id)).decision).toEqual({ kind: 'superseded', rollout: id });
    expect(await rollouts.read(id)).toMatchObject({
      state: 'aborted',
      reason: expect.stringContaining('agent upgrade 0.1.0'),
    });
  });

  /** Steps the rollout until its wave is sent or it stops; every node the wave sent reports applied when `apply`. */
  async function stepToEnd(
    rollouts: Rollouts,
    reports: Map<string, NodeFacts>,
    id: string,
    failing: ReadonlySet<string> = new Set(),
  ) {
    for (let steps = 0; steps < 40; steps += 1) {
      const { record, decision } = await rollouts.step(id);
      if (decision.kind === 'send') {
        const sent = record.waves[decision.wave]?.nodes ?? [];
        for (const n of sent)
          reports.set(n.node, {
            report: failing.has(n.node)
              ? { revision: n.revision ?? 0, state: 'failed', step: 'agent: rolled back' }
              : { revision: n.revision ?? 0, state: 'applied' },
            online: true,
            enrolled: true,
          });
      }
      if (['done', 'halted', 'aborted', 'refused', 'undone'].includes(record.state)) return record;
    }
    throw new Error(`rollout ${id} did not end in 40 steps`);
  }

  it('is undone in its waves: each node it changed set back to the version its host ran before', async () => {
    const { rollouts, calls, reports, start, versions, driven } = over(['a', 'b', 'c']);
    for (const node of ['a', 'b']) versions.reported.set(node, '0.1.0');
    // c never reported: the mesh asked nothing of it before, so its undo takes the version away
    const { id } = await start();
    const upgraded = await stepToEnd(rollouts, reports, id);
    expect(upgraded).toMatchObject({ state: 'done', versionsBefore: ['0.1.0'] });
    expect(calls.filter((c) => c.startsWith('set'))).toEqual(['set 0.2.0 on a', 'set 0.2.0 on b c']);

    const undoId = await rollouts.undo(id, localActor());
    expect(driven).toEqual([undoId]);
    expect(await rollouts.undo(id, localActor())).toBe(undoId);
    const undo = await stepToEnd(rollouts, reports, undoId);
    expect(undo).toMatchObject({
      state: 'done',
      origin: { kind: 'agent-undo', rollout: id, version: '0.2.0' },
    });
    expect(calls.filter((c) => c.startsWith('restore'))).toEqual([
      'restore 0.2.0 on a',
      'restore 0.2.0 on b c',
    ]);
    expect(calls.at(-1)).toBe('push b c');
    expect(Object.fromEntries(versions.items)).toEqual({
      a: { agentVersion: '0.1.0' },
      b: { agentVersion: '0.1.0' },
      c: {},
    });
    expect((await rollouts.read(id)).state).toBe('undone');
  });

  it('undoes a halted one on the nodes it sent, and leaves the nodes it never sent', async () => {
    const { rollouts, reports, start, versions } = over(['a', 'b', 'c']);
    for (const node of ['a', 'b', 'c']) versions.reported.set(node, '0.1.0');
    const { id } = await start();
    expect((await stepToEnd(rollouts, reports, id, new Set(['a']))).state).toBe('halted');
    const undoId = await rollouts.undo(id, localActor());
    expect((await stepToEnd(rollouts, reports, undoId)).state).toBe('done');
    expect(Object.fromEntries(versions.items)).toEqual({ a: { agentVersion: '0.1.0' }, b: {}, c: {} });
  });

  it('sets back, in its undo, a node a freeze held back from its wave: it would be sent the version once the freeze lifts', async () => {
    const { rollouts, reports, start, versions, frozen } = over(['a', 'b']);
    for (const node of ['a', 'b']) versions.reported.set(node, '0.1.0');
    frozen.add('b');
    const { id } = await start();
    await stepToEnd(rollouts, reports, id);
    const sent = await rollouts.page(id, { wave: 1 }, 100_000);
    expect(sent.page.waves[1]?.nodes).toEqual([expect.objectContaining({ node: 'b', state: 'held' })]);
    expect(versions.items.get('b')?.agentVersion).toBe('0.2.0');
    const undoId = await rollouts.undo(id, localActor());
    await stepToEnd(rollouts, reports, undoId);
    expect(Object.fromEntries(versions.items)).toEqual({
      a: { agentVersion: '0.1.0' },
      b: { agentVersion: '0.1.0' },
    });
  });

  it('takes back the wave a step was sending as the undo was asked: its record failed, its versions were set', async () => {
    const { rollouts, reports, start, versions, whileSetting } = over(['a', 'b', 'c']);
    for (const node of ['a', 'b', 'c']) versions.reported.set(node, '0.1.0');
    const { id } = await start();
    let undoId = '';
    whileSetting.push(async () => undefined); // wave 1 goes as usual
    whileSetting.push(async () => {
      undoId = await rollouts.undo(id, localActor());
    });
    await stepToEnd(rollouts, reports, id).catch(() => undefined);
    expect(undoId).not.toBe('');
    // wave 2's step lost its write to the undo: its record says only wave 1 was sent
    expect((await rollouts.read(id)).current).toBe(0);
    expect(versions.items.get('b')?.agentVersion).toBe('0.2.0');
    expect((await stepToEnd(rollouts, reports, undoId)).state).toBe('done');
    expect(Object.fromEntries(versions.items)).toEqual({
      a: { agentVersion: '0.1.0' },
      b: { agentVersion: '0.1.0' },
      c: { agentVersion: '0.1.0' },
    });
  });

  describe('with --auto-undo, stepped by its flow', () => {
    async function haltingOnA(published?: readonly string[]) {
      const parts = over(['a', 'b', 'c'], published);
      for (const node of ['a', 'b', 'c']) parts.versions.reported.set(node, '0.1.0');
      const { id } = await parts.rollouts.start({
        by: localActor(),
        origin: { kind: 'agent', version: '0.2.0' },
        nodes: ['a', 'b', 'c'],
        options: rolloutOptions({ waves: '1,100%', autoUndo: true }),
      });
      const flow = () =>
        advanceForFlow({ rollouts: parts.rollouts, log: new RecordingLog(), now: () => new Date() }, { id });
      let ended: Awaited<ReturnType<typeof flow>> | undefined;
      // a's host rolls 0.2.0 back (the upgrade's first revision for it, 2); everything after applies
      for (let turn = 0; turn < 30 && !ended?.finished; turn += 1) {
        ended = await flow();
        parts.answer((node, revision) => node === 'a' && revision === 2);
      }
      return { ...parts, id, ended };
    }

    it('is undone when it halts, its own flow stepping the undo to its end', async () => {
      const { rollouts, versions, id, ended, calls, driven } = await haltingOnA();
      expect(ended).toEqual({ id, finished: true, waitSeconds: 0 });
      const upgrade = await rollouts.read(id);
      expect(upgrade.state).toBe('undone');
      const undo = await rollouts.read(upgrade.undoneBy ?? '');
      expect(undo).toMatchObject({ state: 'done', origin: { kind: 'agent-undo', rollout: id } });
      expect(driven).toEqual([undo.id]);
      expect(calls).toEqual(['set 0.2.0 on a', 'push a', 'restore 0.2.0 on a', 'push a']);
      expect(Object.fromEntries(versions.items)).toEqual({ a: { agentVersion: '0.1.0' }, b: {}, c: {} });
    });

    it('records its undo when the step that named it died before recording it', async () => {
      const parts = over(['a', 'b', 'c']);
      for (const node of ['a', 'b', 'c']) parts.versions.reported.set(node, '0.1.0');
      const { id } = await parts.rollouts.start({
        by: localActor(),
        origin: { kind: 'agent', version: '0.2.0' },
        nodes: ['a', 'b', 'c'],
        options: rolloutOptions({ waves: '1,100%', autoUndo: true, maxFailures: '0' }),
      });
      const flow = () =>
        advanceForFlow({ rollouts: parts.rollouts, log: new RecordingLog(), now: () => new Date() }, { id });
      for (let turn = 0; turn < 10 && (await parts.rollouts.read(id)).state !== 'halted'; turn += 1) {
        await parts.rollouts.step(id);
        parts.answer((node, revision) => node === 'a' && revision === 2);
      }
      // the step that asked for the undo wrote its name, then died before the undo was recorded
      const halted = await parts.rollouts.read(id);
      await parts.store.write(undoAsked(halted, '20261206T000000000Z-dead01', new Date().toISOString()));
      let ended: Awaited<ReturnType<typeof flow>> | undefined;
      for (let turn = 0; turn < 30 && !ended?.finished; turn += 1) {
        ended = await flow();
        parts.answer(() => false);
      }
      expect(await parts.rollouts.read('20261206T000000000Z-dead01')).toMatchObject({
        state: 'done',
        origin: { kind: 'agent-undo', rollout: id },
      });
      expect(parts.versions.items.get('a')?.agentVersion).toBe('0.1.0');
    });

    it('stays halted, saying why, when its undo is refused, and is not asked again', async () => {
      const { rollouts, versions, id, ended, calls } = await haltingOnA(['0.2.0']);
      expect(ended?.finished).toBe(true);
      const upgrade = await rollouts.read(id);
      expect(upgrade).toMatchObject({
        state: 'halted',
        options: expect.objectContaining({ autoUndo: false }),
        reason: expect.stringContaining('its --auto-undo was refused: undo of rollout'),
      });
      expect(upgrade.undoneBy).toBeUndefined();
      expect(calls).toEqual(['set 0.2.0 on a', 'push a']);
      expect(versions.items.get('a')?.agentVersion).toBe('0.2.0');
    });
  });

  it('is refused, writing nothing, when a version it would set back is not published', async () => {
    const { rollouts, reports, start, versions, driven, store } = over(['a', 'b'], ['0.2.0']);
    versions.reported.set('a', '0.1.0');
    versions.reported.set('b', '0.0.9');
    const { id } = await start();
    await stepToEnd(rollouts, reports, id);
    const before = await rollouts.read(id);
    const refusal = await rollouts.undo(id, localActor()).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(ReleaseNotPublishedError);
    expect((refusal as ReleaseNotPublishedError).versions).toEqual(['0.0.9', '0.1.0']);
    expect(await rollouts.read(id)).toEqual(before);
    expect(driven).toEqual([]);
    expect(store.headers.size).toBe(1);
  });

  it('is not started for a version no release is published for, and nothing is recorded', async () => {
    const { start, store } = over(['a'], ['0.1.0']);
    await expect(start()).rejects.toThrow(ReleaseNotPublishedError);
    expect(store.headers.size).toBe(0);
  });

  it('is not started for a version not published for an architecture its hosts run, naming them', async () => {
    const arches = { c: 'arm64', d: 'arm64', e: 'arm64' };
    const { start, store } = over(['a', 'b', 'c', 'd', 'e'], ['0.2.0'], arches);
    const refusal = await start().catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(ReleaseNotPublishedError);
    expect((refusal as ReleaseNotPublishedError).gaps).toEqual([
      { version: '0.2.0', arch: 'arm64', hosts: 3, nodes: ['c', 'd', 'e'] },
    ]);
    expect((refusal as Error).message).toContain(
      'mesh-host 0.2.0 is not published for arm64 (3 hosts run it: c, d, e)',
    );
    expect(store.headers.size).toBe(0);
    // published for both, it starts; and a rollout of the x64 hosts alone needs no arm64 release
    await expect(over(['a', 'c'], ['0.2.0', '0.2.0/arm64'], arches).start()).resolves.toMatchObject({
      state: 'claiming',
    });
    await expect(over(['a', 'b'], ['0.2.0'], arches).start()).resolves.toMatchObject({ state: 'claiming' });
  });

  it('refuses the undo while a host would go back to a version not published for its architecture, and only then', async () => {
    // a ran 0.1.0 (published for x64 alone) on x64; b ran 0.1.1 on arm64, not published for arm64
    const published = ['0.2.0', '0.2.0/arm64', '0.1.0', '0.1.1'];
    const { rollouts, reports, start, versions, store } = over(['a', 'b'], published, { b: 'arm64' });
    versions.reported.set('a', '0.1.0');
    versions.reported.set('b', '0.1.1');
    const { id } = await start();
    await stepToEnd(rollouts, reports, id);
    const before = await rollouts.read(id);
    const refusal = await rollouts.undo(id, localActor()).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(ReleaseNotPublishedError);
    // 0.1.0 has no arm64 release, but no arm64 host goes back to it: only b's gap is named
    expect((refusal as ReleaseNotPublishedError).gaps).toEqual([
      { version: '0.1.1', arch: 'arm64', hosts: 1, nodes: ['b'] },
    ]);
    expect(await rollouts.read(id)).toEqual(before);
    expect(store.headers.size).toBe(1);

    const mended = over(['a', 'b'], [...published, '0.1.1/arm64'], { b: 'arm64' });
    mended.versions.reported.set('a', '0.1.0');
    mended.versions.reported.set('b', '0.1.1');
    const upgrade = await mended.start();
    await stepToEnd(mended.rollouts, mended.reports, upgrade.id);
    await expect(mended.rollouts.undo(upgrade.id, localActor())).resolves.toBeDefined();
  });

  it('names at most 20 gaps in its refusal, and counts the rest, however many versions the hosts ran', async () => {
    const nodes = Array.from({ length: 30 }, (_, i) => `n${String(i).padStart(2, '0')}`);
    const { rollouts, reports, start, versions } = over(nodes, ['0.2.0']);
    for (const [i, node] of nodes.entries()) versions.reported.set(node, `0.0.${i}`);
    const { id } = await start();
    await stepToEnd(rollouts, reports, id);
    const refusal = (await rollouts
      .undo(id, localActor())
      .catch((error: unknown) => error)) as ReleaseNotPublishedError;
    expect(refusal).toBeInstanceOf(ReleaseNotPublishedError);
    expect(refusal.gaps).toHaveLength(20);
    expect(refusal.versions).toHaveLength(20);
    expect(refusal.more).toBe(10);
    expect(refusal.message).toContain('; 10 more, so a host');
  });

  it('refuses the undo of one that sent no wave yet: abort takes it back', async () => {
    const { rollouts, start } = over(['a']);
    const { id } = await start();
    await expect(rollouts.undo(id, localActor())).rejects.toThrow(RolloutUndoError);
    expect((await rollouts.read(id)).undoneBy).toBeUndefined();
  });

  it('is asked for with agent and the nodes, and refused without them', () => {
    const asked = rolloutRequest.parse({ agent: '0.2.0', nodes: ['a'], waves: '100%' });
    expect(originOf(asked)).toEqual({ kind: 'agent', version: '0.2.0' });
    expect(rolloutRequest.safeParse({ agent: '0.2.0', waves: '100%' }).success).toBe(false);
    expect(rolloutRequest.safeParse({ agent: '0.2.0', node: 'a', nodes: ['a'], waves: '100%' }).success).toBe(
      false,
    );
    expect(rolloutRequest.safeParse({ agent: 'not a version', nodes: ['a'], waves: '100%' }).success).toBe(
      false,
    );
  });
});

describe('a declaration’s agent version', () => {
  const snapshot = (agent?: string): NodeSnapshot => ({
    node: 'web1',
    assignments: [{ module: 'nginx', version: '1.0', provides: null }],
    relations: [],
    dependents: [],
    provisions: [],
    grants: [],
    sent: undefined,
    mark: undefined,
    sealingKey: undefined,
    ...(agent ? { agent } : {}),
  });
  const mint = { now: () => new Date(0) } as never;

  it('is named only once set, so a node without one keeps its digest', async () => {
    const without = await compose(snapshot(), new Map(), mint);
    const withVersion = await compose(snapshot('0.2.0'), new Map(), mint);
    expect(without.declaration).not.toHaveProperty('agent');
    expect(without.canonical).not.toContain('agent');
    expect(withVersion.declaration.agent).toEqual({ version: '0.2.0' });
    expect(withVersion.digest).not.toBe(without.digest);
    const { agent: _agent, ...rest } = withVersion.declaration;
    expect(rest).toEqual(without.declaration);
  });
});
