import { createHmac, randomUUID } from 'node:crypto';
import { logLine, say } from '../../core/coded-lines.ts';
import { type EventSink, eventLines, type MeshEvent } from '../../core/events/index.ts';
import type { Log } from '../../core/ports.ts';

export type WebhookOptions = {
  readonly url: string;
  /** MESH_EVENTS_WEBHOOK_SECRET: the key of the HMAC-SHA256 in `Mesh-Signature`. */
  readonly secret: string;
  readonly log: Log;
  /** Events waiting at most; past it the oldest are let go, each said. @default 1000 */
  readonly capacity?: number;
  /** Tries of one event before it is let go. @default 6 (about 30 s of backoff) */
  readonly tries?: number;
  /** The first wait after a failed try, doubled each time up to 16 s. @default 500 */
  readonly backoffMs?: number;
  /** One request's bound. @default 5000 */
  readonly timeoutMs?: number;
};

/** `sha256=<hex>` of the body under the secret: what a receiver computes to trust the body. */
export const signatureOf = (secret: string, body: string) =>
  `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

/** The body posted: EventBridge's envelope, so one receiver reads both. */
export const webhookBody = (event: MeshEvent, id = randomUUID()) =>
  JSON.stringify({ id, source: 'mesh', 'detail-type': event.type, time: event.time, detail: event.detail });

/**
 * The local runtime's events (MESH_EVENTS_WEBHOOK): each posted as JSON, signed
 * (`Mesh-Signature: sha256=<hex>`, HMAC-SHA256 over the body), in order, one at a time, retried
 * with a doubling backoff. `publish` only puts them on a bounded queue in memory and returns: a
 * receiver that is down or slow never holds a change up, and what it misses past the bound is
 * said (`events.dropped`), never kept forever.
 */
export class WebhookEventSink implements EventSink {
  readonly #options: Required<Omit<WebhookOptions, 'log'>> & { readonly log: Log };
  readonly #queue: { readonly event: MeshEvent; readonly body: string }[] = [];
  #sending: Promise<void> | undefined;

  constructor(options: WebhookOptions) {
    this.#options = {
      capacity: 1000,
      tries: 6,
      backoffMs: 500,
      timeoutMs: 5_000,
      ...options,
    };
  }

  async publish(events: readonly MeshEvent[]): Promise<void> {
    for (const event of events) {
      if (this.#queue.length >= this.#options.capacity) {
        const dropped = this.#queue.shift();
        if (dropped)
          this.#said('dropped', dropped.event, 'the queue of events waiting for the webhook is full');
      }
      this.#queue.push({ event, body: webhookBody(event) });
    }
    this.#sending ??= this.#drain().finally(() => {
      this.#sending = undefined;
    });
  }

  /** Resolves once every event queued so far was delivered or let go (a stop waits on it). */
  async settled(): Promise<void> {
    while (this.#sending) await this.#sending;
  }

  async #drain(): Promise<void> {
    for (let next = this.#queue.shift(); next; next = this.#queue.shift())
      await this.#deliver(next.event, next.body);
  }

  async #deliver(event: MeshEvent, body: string): Promise<void> {
    const { url, secret, tries, backoffMs, timeoutMs } = this.#options;
    let reason = '';
    for (let attempt = 1; attempt <= tries; attempt += 1) {
      try {
        const answer = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'mesh-signature': signatureOf(secret, body) },
          body,
          signal: AbortSignal.timeout(timeoutMs),
        });
        await answer.body?.cancel();
        if (answer.ok) return;
        reason = `the webhook answered ${answer.status}`;
      } catch (error) {
        reason = (error as Error).message;
      }
      if (attempt < tries)
        await new Promise((resolve) =>
          setTimeout(resolve, Math.min(backoffMs * 2 ** (attempt - 1), 16_000)).unref(),
        );
    }
    this.#said('lost', event, `${tries} tries: ${reason}`);
  }

  #said(how: 'dropped' | 'lost', event: MeshEvent, reason: string) {
    logLine(this.#options.log, say(eventLines.notDelivered, { type: event.type, how, reason }));
  }
}
