import { type CodedLine, say } from '../../../server/core/coded-lines.ts';
import type { NodeSignal, SignalChannel } from '../../../server/core/signal/channel.ts';
import { type AgentLog, agentLines } from '../log-lines.ts';
import type { SignalLink } from './ports.ts';

/** The longest wait between two connect attempts while the broker is away. */
export const brokerRetryMaxMs = 30_000;
const brokerRetryFirstMs = 1_000;
/**
 * How long after a lost connection the host's first reconnect may come, spread evenly: a blip
 * drops the whole fleet at once, and the broker (IoT: a quota of connects a second an account,
 * each an authorizer call) should see them back over this window, not in one second.
 */
export const defaultReconnectWindowMs = 30_000;

export type SignalWatchOptions = {
  /** Without a link the agent polls, whatever the control plane names. */
  readonly link: SignalLink | undefined;
  readonly channel: SignalChannel | undefined;
  /** Keeps a channel the control plane named (in enrolment.json). */
  readonly onChannel?: (channel: SignalChannel) => Promise<void>;
  /** The ETag the host applied last: a signal naming it is no news. */
  readonly appliedEtag: () => string | undefined;
  readonly pollSeconds: number;
  readonly log: AgentLog;
  readonly now: () => number;
  readonly random: () => number;
  /** @default defaultReconnectWindowMs */
  readonly reconnectWindowMs?: number;
};

/**
 * The host's side of the signal: keeps one connection to the broker and says when a fetch is
 * owed (just connected, the connection was lost, or a signal names an ETag other than the one
 * applied). While the broker is away it is asked again with backoff, and the run loop polls;
 * when it is back the loop is on the signal again. Anything that should end the loop's wait
 * early (a signal, a lost connection) aborts `wakeSignal()`.
 */
export class SignalWatch {
  readonly #options: SignalWatchOptions;
  #channel: SignalChannel | undefined;
  #connected = false;
  #everConnected = false;
  #failures = 0;
  #nextAttemptAt = 0;
  #owed = false;
  #news = 0;
  #wake = new AbortController();
  #lastSaid = '';

  constructor(options: SignalWatchOptions) {
    this.#options = options;
    this.#channel = options.channel;
  }

  /** Connected and subscribed: fetches are owed by signals, not by the clock. */
  get connected(): boolean {
    return this.#connected;
  }

  get channel(): SignalChannel | undefined {
    return this.#channel;
  }

  /** Aborted when the loop should stop waiting; a new one after each `rearm()`. */
  wakeSignal(): AbortSignal {
    return this.#wake.signal;
  }

  /** Called at the top of each turn, before deciding what to do, so no wake-up is missed. */
  rearm(): void {
    if (this.#wake.signal.aborted) this.#wake = new AbortController();
  }

  /** A fetch is owed by the signal; `fetchStarting` then `fetched` clear it, unless news came in between. */
  get fetchOwed(): boolean {
    return this.#owed;
  }

  fetchStarting(): number {
    return this.#news;
  }

  fetched(newsAtStart: number): void {
    if (newsAtStart === this.#news) this.#owed = false;
  }

  /** How long until the next connect attempt is due; undefined when there is none to make. */
  msUntilAttempt(): number | undefined {
    if (!this.#options.link || !this.#channel || this.#connected) return undefined;
    return Math.max(0, this.#nextAttemptAt - this.#options.now());
  }

  /** Connects when an attempt is due: a first one, or the next after backoff. */
  async connectIfDue(): Promise<void> {
    const link = this.#options.link;
    const channel = this.#channel;
    if (!link || !channel || this.#connected || this.#options.now() < this.#nextAttemptAt) return;
    try {
      await link.open(channel, {
        signal: (signal) => this.#onSignal(channel, signal),
        lost: (reason) => this.#onLost(channel, reason),
      });
    } catch (error) {
      this.#failures += 1;
      const backoff = Math.min(brokerRetryMaxMs, brokerRetryFirstMs * 2 ** Math.min(this.#failures, 10));
      const wait = Math.round(backoff * (0.5 + this.#options.random() / 2));
      this.#nextAttemptAt = this.#options.now() + wait;
      this.#say(agentLines.brokerUnreachable, {
        url: channel.url,
        reason: (error as Error).message,
        pollSeconds: this.#options.pollSeconds,
      });
      return;
    }
    this.#connected = true;
    this.#owed = true;
    this.#news += 1;
    this.#failures = 0;
    this.#say(this.#everConnected ? agentLines.brokerBack : agentLines.onSignal, { url: channel.url });
    this.#everConnected = true;
  }

  /** The control plane named the channel: kept, and used at once when it changed. */
  async learn(channel: SignalChannel): Promise<void> {
    if (JSON.stringify(channel) === JSON.stringify(this.#channel)) return;
    const moved = this.#channel !== undefined;
    this.#channel = channel;
    await this.#options.onChannel?.(channel);
    if (!this.#options.link) return;
    this.#say(agentLines.brokerNamed, { url: channel.url, moved });
    if (this.#connected) await this.close();
    this.#nextAttemptAt = 0;
  }

  async close(): Promise<void> {
    this.#connected = false;
    await this.#options.link?.close();
  }

  #onSignal(channel: SignalChannel, signal: NodeSignal): void {
    if (channel !== this.#channel || signal.etag === this.#options.appliedEtag()) return;
    if (signal.revoked) this.#say(agentLines.signalledRevoked, {});
    else this.#say(agentLines.signalled, { revision: signal.revision });
    this.#owed = true;
    this.#news += 1;
    this.#wake.abort();
  }

  #onLost(channel: SignalChannel, reason: string): void {
    if (channel !== this.#channel || !this.#connected) return;
    this.#connected = false;
    this.#owed = true;
    this.#news += 1;
    // The fetch owed is made at once; only the reconnect is spread over the window.
    const reconnectInMs = Math.round(
      this.#options.random() * (this.#options.reconnectWindowMs ?? defaultReconnectWindowMs),
    );
    this.#nextAttemptAt = this.#options.now() + reconnectInMs;
    this.#say(agentLines.brokerLost, { reason, pollSeconds: this.#options.pollSeconds, reconnectInMs });
    this.#wake.abort();
  }

  /** Says a line once, not again while nothing changed. */
  #say<Fields extends object>(line: CodedLine<Fields>, fields: Fields): void {
    const said = say(line, fields);
    if (said.message !== this.#lastSaid) this.#options.log(said);
    this.#lastSaid = said.message;
  }
}
