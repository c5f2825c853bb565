import type { NodeSignal, SignalChannel } from './channel.ts';
import type { PresenceEvent } from './presence.ts';

/**
 * What the signal area needs from the world, and what it offers a handler. Adapters
 * (lib/adapters/signal/*, lib/server/adapters/signal/presence-store.ts) implement the first two;
 * SignalAnnouncer (announce.ts) is the third.
 */

/** Publishes a node's signal (QoS 1, retained): the IoT data plane on AWS, the embedded broker locally. */
export interface SignalPublisher {
  publish(node: string, signal: NodeSignal): Promise<void>;
}

/** Keeps each node's latest connect or disconnect (presence.ts says which event is newer). */
export interface PresenceStore {
  /**
   * Records the event unless a newer one is recorded (StalePresenceError) or the node does not
   * exist (PresenceOfUnknownNodeError); writes nothing then.
   */
  recordPresence(event: PresenceEvent): Promise<void>;
}

/**
 * Tells a node's host that its identity is gone (the node removed or disenrolled), so a host on
 * the signal hears its key refused at once; never throws (announce.ts).
 */
export interface RevocationSignal {
  revoked(node: string): Promise<boolean>;
}

/** Where a node's host waits for its signal; undefined when no broker is configured. */
export type SignalChannels = (node: string) => SignalChannel | undefined;
