import { logLine, say } from '../coded-lines.ts';
import type { Log } from '../ports.ts';
import { PresenceOfUnknownNodeError, StalePresenceError } from './errors.ts';
import { signalLines } from './log-lines.ts';
import type { PresenceStore } from './ports.ts';

/**
 * Presence instead of heartbeats: the broker says when a node's host connects and disconnects,
 * and the node's `online` and `lastHeard` follow. Events arrive late and out of order, and a
 * connection's "disconnected" may come after the next connection's "connected" (a host that
 * reconnected at once). So the newer event is the one of the newer connection (a higher
 * version: IoT's versionNumber grows with each connection of a client id), then within one
 * connection the later one; and since a version may start over (IoT forgets a client id some
 * time after it left; a local broker restarts), an event more than `versionTrustMs` newer wins
 * by its time alone. A late "disconnected" never hides a newer connect.
 */
export type PresenceEvent = {
  readonly node: string;
  readonly state: 'connected' | 'disconnected';
  /** When the broker saw it, epoch milliseconds. */
  readonly atMs: number;
  /** The connection's version: the same for its connect and its disconnect. */
  readonly version: number;
};

/** Past this much newer, an event wins whatever its version says. */
export const versionTrustMs = 5 * 60 * 1000;

export type PresenceOutcome = 'recorded' | 'stale' | 'unknown-node';

/** Records one presence event; an older or orphaned event is said and dropped, never an error. */
export async function notePresence(
  deps: { readonly presence: PresenceStore; readonly log: Log },
  event: PresenceEvent,
): Promise<PresenceOutcome> {
  const fields = { node: event.node, state: event.state, at: new Date(event.atMs).toISOString() };
  try {
    await deps.presence.recordPresence(event);
    logLine(deps.log, say(signalLines.presence, fields));
    return 'recorded';
  } catch (error) {
    if (error instanceof StalePresenceError) {
      logLine(deps.log, say(signalLines.presenceStale, fields));
      return 'stale';
    }
    if (error instanceof PresenceOfUnknownNodeError) {
      logLine(deps.log, say(signalLines.presenceUnknown, fields));
      return 'unknown-node';
    }
    throw error;
  }
}
