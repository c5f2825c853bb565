import { describe, expect, it } from 'vitest';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { AnnouncingRollouts } from '../../lib/server/core/events/announcing.ts';
import type { EventSink, MeshEvent } from '../../lib/server/core/events/events.ts';
import type { NodeFacts } from '../../lib/server/core/rollout/advance.ts';
import { rolloutOptions } from '../../lib/server/core/rollout/waves.ts';
import { MemoryRolloutStore } from '../support/memory-rollout-store.ts';

/**
 * An upgrade rolled out and undone through the rollouts the wiring builds (AnnouncingRollouts):
 * rollout.started and rollout.done for the upgrade, then rollout.undone, once, when the undo's
 * last wave applied; a step that fails tells nothing.
 */
describe('a rollout undone, as told', () => {
  it('tells rollout.undone once when the undo’s waves applied, and nothing for a step that failed', async () => {
    const told: MeshEvent[] = [];
    const events: EventSink = { publish: async (published) => void told.push(...published) };
    const store = new MemoryRolloutStore();
    let revision = 0;
    const sent = new Map<string, number>();
    let failNextWave = false;
    let rollouts: AnnouncingRollouts;
    rollouts = new AnnouncingRollouts(
      {
        store,
        facts: {
          // every node sent has applied what it was sent
          of: async (nodes) =>
            new Map(
              nodes.map((node): [string, NodeFacts] => [
                node,
                { report: { revision: sent.get(node) ?? 0, state: 'applied' }, online: true, enrolled: true },
              ]),
            ),
          revisions: async (nodes) => new Map(nodes.map((node) => [node, sent.get(node) ?? 0])),
        },
        wave: async (nodes) => {
          if (failNextWave) {
            failNextWave = false;
            throw new Error('the push flow failed');
          }
          revision += 1;
          for (const node of nodes) sent.set(node, revision);
          return {
            pushed: null,
            flushed: nodes.map((node) => ({ node, revision, round: 1 })),
            rounds: 1,
            behind: [],
          };
        },
        behind: async () => [],
        exists: async () => true,
        now: () => new Date(),
        requestUndo: async (undo, by) => {
          await rollouts.startUndo({
            id: undo.rollout,
            undoes: undo.undoes,
            module: undo.module,
            version: undo.version,
            options: undo.options,
            by,
          });
        },
      },
      events,
    );
    const stepUntilEnded = async (id: string) => {
      for (let step = 0; step < 20; step += 1) {
        const { record } = await rollouts.step(id);
        if (['done', 'halted', 'aborted', 'undone'].includes(record.state)) return record;
      }
      throw new Error(`rollout ${id} did not end`);
    };

    const upgrade = await rollouts.start({
      by: localActor(),
      origin: { kind: 'upgrade', module: 'web', version: '2.0', from: '1.0' },
      nodes: ['w1', 'w2', 'w3'],
      options: rolloutOptions({ waves: '1,100%' }),
    });
    await stepUntilEnded(upgrade.id);
    const undo = await rollouts.undo(upgrade.id, localActor());
    failNextWave = true;
    await expect(stepUntilEnded(undo)).rejects.toThrow('the push flow failed');
    expect(told.filter((event) => event.type === 'rollout.undone')).toEqual([]);
    await stepUntilEnded(undo);
    for (let step = 0; step < 5; step += 1) await rollouts.step(undo);

    expect(told.map((event) => event.type)).toEqual([
      'rollout.started',
      'rollout.done',
      'rollout.started',
      'rollout.undone',
    ]);
    expect(told.at(-1)?.detail).toMatchObject({ rollout: upgrade.id, undo, module: 'web', version: '1.0' });
  });
});
