import { describe, expect, it } from 'vitest';
import { signalPresenceHandler } from '../../lib/server/api/handlers/signal.ts';
import { StalePresenceError } from '../../lib/server/core/signal/errors.ts';
import type { PresenceStore } from '../../lib/server/core/signal/ports.ts';
import type { PresenceEvent } from '../../lib/server/core/signal/presence.ts';
import { StoreUnavailableError } from '../../lib/server/core/unavailable.ts';
import { RecordingLog } from '../support/control-fakes.ts';

/** Presence as the store keeps it: what it was given, refusing what a test marks stale. */
class RecordingPresence implements PresenceStore {
  readonly recorded: PresenceEvent[] = [];
  refuseWith: Error | undefined;
  async recordPresence(event: PresenceEvent): Promise<void> {
    if (this.refuseWith) throw this.refuseWith;
    this.recorded.push(event);
  }
}

const lifecycle = (fields: Record<string, unknown> = {}) => ({
  clientId: 'web1',
  timestamp: 1_790_000_000_000,
  eventType: 'connected',
  sessionIdentifier: 'a4666d2a',
  principalIdentifier: '77656231',
  versionNumber: 3,
  ...fields,
});

describe('signalPresenceHandler', () => {
  it('records an IoT lifecycle event as the node’s presence', async () => {
    const presence = new RecordingPresence();
    const record = signalPresenceHandler({ presence, log: new RecordingLog() });

    expect(await record(lifecycle())).toBe('recorded');
    expect(
      await record(lifecycle({ eventType: 'disconnected', disconnectReason: 'CLIENT_INITIATED_DISCONNECT' })),
    ).toBe('recorded');
    expect(presence.recorded).toEqual([
      { node: 'web1', state: 'connected', atMs: 1_790_000_000_000, version: 3 },
      { node: 'web1', state: 'disconnected', atMs: 1_790_000_000_000, version: 3 },
    ]);
  });

  it('drops, with a line, an event that names no node or is not a lifecycle event', async () => {
    const presence = new RecordingPresence();
    const log = new RecordingLog();
    const record = signalPresenceHandler({ presence, log });

    const outcomes = [
      await record(lifecycle({ clientId: 'Not_A_Node' })),
      await record(lifecycle({ eventType: 'subscribed' })),
      await record('nonsense'),
    ];

    expect(outcomes).toEqual(['dropped', 'dropped', 'dropped']);
    expect(presence.recorded).toEqual([]);
    expect(log.lines.filter((line) => line.level === 'warn')).toHaveLength(3);
  });

  it('says a late event lost to a newer one, and lets a store that is away throw, for Lambda to retry', async () => {
    const presence = new RecordingPresence();
    const record = signalPresenceHandler({ presence, log: new RecordingLog() });
    presence.refuseWith = new StalePresenceError('older');
    const late = await record(lifecycle());
    presence.refuseWith = new StoreUnavailableError('recording presence');

    expect(late).toBe('stale');
    await expect(record(lifecycle())).rejects.toBeInstanceOf(StoreUnavailableError);
  });
});
