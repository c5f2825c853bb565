import { describe, expect, it } from 'vitest';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { advanceForFlow, driveRunning } from '../../lib/server/core/rollout/drive.ts';
import { RolloutRaceError } from '../../lib/server/core/rollout/errors.ts';
import type { RolloutStore } from '../../lib/server/core/rollout/ports.ts';
import { Rollouts } from '../../lib/server/core/rollout/service.ts';
import { rolloutOptions } from '../../lib/server/core/rollout/waves.ts';
import { StoreUnavailableError } from '../../lib/server/core/unavailable.ts';
import { RecordingLog } from '../support/control-fakes.ts';
import { MemoryRolloutStore } from '../support/memory-rollout-store.ts';

/** A store that cannot be reached at all. */
const away: RolloutStore = {
  create: async () => {
    throw new StoreUnavailableError('the inventory table');
  },
  write: async () => {
    throw new StoreUnavailableError('the inventory table');
  },
  read: async () => {
    throw new StoreUnavailableError('the inventory table');
  },
  withNodes: async () => {
    throw new StoreUnavailableError('the inventory table');
  },
  nodesFrom: async () => {
    throw new StoreUnavailableError('the inventory table');
  },
  held: async () => {
    throw new StoreUnavailableError('the inventory table');
  },
  moveClaims: async () => {
    throw new StoreUnavailableError('the inventory table');
  },
  list: async () => {
    throw new StoreUnavailableError('the inventory table');
  },
  running: async () => {
    throw new StoreUnavailableError('the inventory table');
  },
  sweep: async () => {
    throw new StoreUnavailableError('the inventory table');
  },
  claim: async () => {
    throw new StoreUnavailableError('the inventory table');
  },
  release: async () => {
    throw new StoreUnavailableError('the inventory table');
  },
};

describe('driveRunning', () => {
  it('logs a store it cannot reach and returns: a tick never rejects (the local runtime would end)', async () => {
    // Prepare
    const log = new RecordingLog();
    const rollouts = new Rollouts({
      store: away,
      facts: { of: async () => new Map(), revisions: async () => new Map() },
      wave: async () => ({ pushed: null, flushed: [], rounds: 0, behind: [] }),
      behind: async () => [],
      exists: async () => true,
      now: () => new Date(0),
    });
    // Act
    await driveRunning({ rollouts, rolloutStore: away, log });
    await driveRunning({ rollouts, rolloutStore: away, log }, ['20260101T000000000Z-abcdef']);
    // Assess
    expect(log.coded.map((line) => [line.level, line.code])).toEqual([
      ['warn', 'push.rollout-step-failed'],
      ['warn', 'push.rollout-step-failed'],
    ]);
  });
});

describe('advanceForFlow', () => {
  const flowOver = (store: MemoryRolloutStore) => {
    const sent: string[][] = [];
    const rollouts = new Rollouts({
      store,
      facts: { of: async () => new Map(), revisions: async () => new Map() },
      wave: async (nodes) => {
        sent.push([...nodes]);
        return {
          pushed: null,
          flushed: nodes.map((node) => ({ node, revision: 1, round: 1 })),
          rounds: 1,
          behind: [],
        };
      },
      behind: async () => [],
      exists: async () => true,
      now: () => new Date('2026-01-01T00:00:00Z'),
      claimStep: { nodes: 2, ms: 10_000 },
    });
    return { rollouts, sent };
  };
  const start = (rollouts: Rollouts, selector: string, nodes: string[]) =>
    rollouts.start({
      by: localActor(),
      origin: { kind: 'on', selector },
      nodes,
      options: rolloutOptions({ waves: '1,100%' }),
    });

  it('takes the claiming steps one after another in one Task, then sends wave 1', async () => {
    // Prepare
    const store = new MemoryRolloutStore();
    const { rollouts, sent } = flowOver(store);
    const { id } = await start(rollouts, 'a', ['a1', 'a2', 'a3', 'a4', 'a5']);
    // Act
    const answer = await advanceForFlow({ rollouts, log: new RecordingLog(), now: () => new Date() }, { id });
    // Assess
    expect(answer).toMatchObject({ id, finished: false });
    expect(sent).toEqual([['a1']]);
    expect(store.claims.size).toBe(5);
  });

  it('finishes a refused rollout once it has let go of its claims', async () => {
    // Prepare
    const store = new MemoryRolloutStore();
    const { rollouts } = flowOver(store);
    const log = new RecordingLog();
    const holder = await start(rollouts, 'h', ['b3']);
    await advanceForFlow({ rollouts, log, now: () => new Date() }, { id: holder.id });
    const { id } = await start(rollouts, 'b', ['b1', 'b2', 'b3']);
    // Act
    const answer = await advanceForFlow({ rollouts, log, now: () => new Date() }, { id });
    // Assess
    expect(answer).toEqual({ id, finished: true, waitSeconds: 0 });
    expect(await rollouts.read(id)).toMatchObject({ state: 'refused', refusal: { rollout: holder.id } });
    expect([...store.claims.values()].map((c) => c.rollout)).toEqual([holder.id]);
  });
});

describe('resume of a rollout nothing steps', () => {
  const over = (store: MemoryRolloutStore, driving: boolean) =>
    new Rollouts({
      store,
      facts: { of: async () => new Map(), revisions: async () => new Map() },
      wave: async (nodes) => ({
        pushed: null,
        flushed: nodes.map((node) => ({ node, revision: 1, round: 1 })),
        rounds: 1,
        behind: [],
      }),
      behind: async () => [],
      exists: async () => true,
      now: () => new Date('2026-01-01T00:00:00Z'),
      driving: async () => driving,
    });
  const running = async (rollouts: Rollouts) => {
    const started = await rollouts.start({
      by: localActor(),
      origin: { kind: 'on', selector: 'a' },
      nodes: ['a1', 'a2'],
      options: rolloutOptions({ waves: '1,100%' }),
    });
    await advanceForFlow({ rollouts, log: new RecordingLog(), now: () => new Date() }, { id: started.id });
    return rollouts.read(started.id);
  };

  it('writes a new version of a running rollout whose flow died, where it stands: its flow starts again', async () => {
    // Prepare
    const store = new MemoryRolloutStore();
    const rollouts = over(store, false);
    const before = await running(rollouts);
    expect(before.state).toBe('running');
    // Act
    const after = await rollouts.resume(before.id, localActor());
    // Assess
    expect(after).toMatchObject({ state: 'running', current: before.current, version: before.version + 1 });
  });

  it('refuses a running rollout that its flow still steps, as before', async () => {
    // Prepare
    const store = new MemoryRolloutStore();
    const rollouts = over(store, true);
    const before = await running(rollouts);
    // Act, Assess
    await expect(rollouts.resume(before.id, localActor())).rejects.toThrow(
      /is running: it cannot be resumed/,
    );
  });
});

describe('a rollout’s page read while a step writes', () => {
  /** A store whose parts a step replaces under the first reads: they answer that the record changed. */
  class RacedStore extends MemoryRolloutStore {
    races = 2;
    override async nodesFrom(record: Parameters<MemoryRolloutStore['nodesFrom']>[0], at: number) {
      if (this.races > 0) {
        this.races -= 1;
        throw new RolloutRaceError(record.id);
      }
      return super.nodesFrom(record, at);
    }
  }

  it('is read again from a fresh record, not answered with the race', async () => {
    const store = new RacedStore();
    const rollouts = new Rollouts({
      store,
      facts: { of: async () => new Map(), revisions: async () => new Map() },
      wave: async () => ({ pushed: null, flushed: [], rounds: 1, behind: [] }),
      behind: async () => [],
      exists: async () => true,
      now: () => new Date('2026-01-01T00:00:00Z'),
    });
    const { id } = await rollouts.start({
      by: localActor(),
      origin: { kind: 'on', selector: 'role=web' },
      nodes: ['a', 'b'],
      options: rolloutOptions({ waves: '100%' }),
    });
    const { page } = await rollouts.page(id, {}, 1_000_000);
    expect(page.waves[0]?.nodes?.map((n) => n.node)).toEqual(['a', 'b']);
    expect(store.races).toBe(0);
    store.races = 10;
    await expect(rollouts.page(id, {}, 1_000_000)).rejects.toThrow(RolloutRaceError);
  });
});
