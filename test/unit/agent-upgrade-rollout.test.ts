import { describe, expect, it } from 'vitest';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { compose } from '../../lib/server/core/mesh/declaration.ts';
import type { NodeSnapshot } from '../../lib/server/core/mesh/model.ts';
import type { NodeFacts } from '../../lib/server/core/rollout/advance.ts';
import { originOf, rolloutRequest } from '../../lib/server/core/rollout/requests.ts';
import { Rollouts } from '../../lib/server/core/rollout/service.ts';
import { rolloutOptions } from '../../lib/server/core/rollout/waves.ts';
import { MemoryRolloutStore } from '../support/memory-rollout-store.ts';

/**
 * `mesh agent upgrade VERSION` as a rollout (origin `agent`): each wave sets the version on its
 * nodes just before its push, so no node is behind on it before its wave; a host that refused or
 * rolled the release back reports the revision failed, which halts the rollout as any failure.
 */
describe('an agent upgrade in waves', () => {
  function over(nodes: readonly string[]) {
    const calls: string[] = [];
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
      wave: async (sent) => {
        calls.push(`push ${sent.join(' ')}`);
        revision += 1;
        return {
          pushed: null,
          flushed: sent.map((node) => ({ node, revision, round: 1 })),
          rounds: 1,
          behind: [],
        };
      },
      setAgentVersion: async (version, sent) => {
        calls.push(`set ${version} on ${sent.join(' ')}`);
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
    return { rollouts, calls, reports, start };
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

  it('is taken over, once halted, by the next agent upgrade, and its undo names that one', async () => {
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
    await expect(rollouts.undo(id, localActor())).rejects.toThrow(
      /is an agent upgrade: .*mesh agent upgrade VERSION/,
    );
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
