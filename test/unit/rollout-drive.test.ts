import { describe, expect, it } from 'vitest';
import { driveRunning } from '../../lib/core/rollout/drive.ts';
import type { RolloutStore } from '../../lib/core/rollout/ports.ts';
import { Rollouts } from '../../lib/core/rollout/service.ts';
import { StoreUnavailableError } from '../../lib/core/unavailable.ts';
import { RecordingLog } from '../support/control-fakes.ts';

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
  list: async () => {
    throw new StoreUnavailableError('the inventory table');
  },
  running: async () => {
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
