import { logLine, say } from '../coded-lines.ts';
import type { Log } from '../ports.ts';
import { describeCause } from '../unavailable.ts';
import type { NodeSignal } from './channel.ts';
import { signalLines } from './log-lines.ts';
import type { SignalPublisher } from './ports.ts';

export type SignalAnnouncerDeps = {
  readonly publisher: SignalPublisher;
  readonly log: Log;
  /** Counts a signal that could not be published (the metric SignalsNotPublished on AWS). */
  readonly countFailure: () => void;
};

/**
 * Tells a node it was sent something, after the send committed. A publish that fails never
 * fails or repeats the push: the send is done, and the host catches up on its reconnect fetch
 * or its safety fetch. The failure is logged and counted, so an alarm can say the signal is away.
 */
export class SignalAnnouncer {
  readonly #deps: SignalAnnouncerDeps;

  constructor(deps: SignalAnnouncerDeps) {
    this.#deps = deps;
  }

  /**
   * Tells a node its host identity is gone (the node removed or disenrolled), so a host on the
   * signal fetches at once, hears its key refused and stops, rather than at its safety fetch.
   */
  revoked(node: string): Promise<boolean> {
    return this.announce(node, { revision: 0, etag: 'revoked', revoked: true });
  }

  async announce(node: string, signal: NodeSignal): Promise<boolean> {
    try {
      await this.#deps.publisher.publish(node, signal);
      return true;
    } catch (error) {
      this.#deps.countFailure();
      const fields = { node, revision: signal.revision, reason: describeCause(error) };
      logLine(this.#deps.log, say(signalLines.notPublished, fields), { error: fields.reason });
      return false;
    }
  }
}
