import {
  PutEventsCommand,
  type PutEventsCommandOutput,
  type PutEventsRequestEntry,
} from '@aws-sdk/client-eventbridge';
import { logLine, say } from '../../core/coded-lines.ts';
import { type EventSink, eventLines, type MeshEvent } from '../../core/events/index.ts';
import type { Log } from '../../core/ports.ts';

/** What the sink asks of the SDK's EventBridgeClient: PutEvents, cancellable. */
export type PutEventsClient = {
  send(
    command: PutEventsCommand,
    options?: { readonly abortSignal?: AbortSignal },
  ): Promise<Pick<PutEventsCommandOutput, 'FailedEntryCount' | 'Entries'>>;
};

export type EventBridgeOptions = {
  readonly client: PutEventsClient;
  /** MESH_EVENT_BUS_NAME: the stack's own bus. */
  readonly busName: string;
  readonly log: Log;
  /** Calls of one entry before it is let go. @default 3 */
  readonly tries?: number;
  /** The first wait after a failed call, doubled each time. @default 100 */
  readonly backoffMs?: number;
  /** The longest one publish takes, retries included: past it what is left is let go. @default 2000 */
  readonly deadlineMs?: number;
};

/** PutEvents' own bounds (EventBridge quotas): 10 entries and 256 KB a call. */
export const putEventsBounds = { entries: 10, bytes: 256 * 1024 } as const;

/** The source every Mesh event carries; a rule matches on it. */
export const eventSource = 'mesh';

/** An entry's size as EventBridge counts it: Time (14), Source, DetailType, Detail and Resources, in UTF-8 bytes. */
export const entrySize = (entry: PutEventsRequestEntry): number =>
  (entry.Time ? 14 : 0) +
  Buffer.byteLength(entry.Source ?? '') +
  Buffer.byteLength(entry.DetailType ?? '') +
  Buffer.byteLength(entry.Detail ?? '') +
  (entry.Resources ?? []).reduce((sum, resource) => sum + Buffer.byteLength(resource), 0);

/** Entries (or what carries one) cut into calls of at most 10 entries and 256 KB, in order. */
export function batchesOf<T>(items: readonly T[], entryOf: (item: T) => PutEventsRequestEntry): T[][] {
  const batches: T[][] = [];
  let batch: T[] = [];
  let bytes = 0;
  for (const entry of items) {
    const size = entrySize(entryOf(entry));
    if (
      batch.length === putEventsBounds.entries ||
      (batch.length > 0 && bytes + size > putEventsBounds.bytes)
    ) {
      batches.push(batch);
      batch = [];
      bytes = 0;
    }
    batch.push(entry);
    bytes += size;
  }
  if (batch.length > 0) batches.push(batch);
  return batches;
}

type Pending = { readonly event: MeshEvent; readonly entry: PutEventsRequestEntry; reason: string };

/**
 * Events on AWS: PutEvents on the stack's bus, in calls of at most 10 entries and 256 KB, the
 * entries a call failed (throttled, an internal failure, the call itself refused) tried again
 * after a doubling backoff. A Lambda function cannot leave work running after it answers, so
 * the publish is awaited, but bounded: past `deadlineMs` the call is cancelled and what is left
 * is said (`events.not-delivered`) and let go; it never throws, so the change it tells of stands.
 */
export class EventBridgeEventSink implements EventSink {
  readonly #options: Required<Omit<EventBridgeOptions, 'client' | 'log'>> &
    Pick<EventBridgeOptions, 'client' | 'log'>;

  constructor(options: EventBridgeOptions) {
    this.#options = { tries: 3, backoffMs: 100, deadlineMs: 2_000, ...options };
  }

  async publish(events: readonly MeshEvent[]): Promise<void> {
    const { client, tries, backoffMs, deadlineMs } = this.#options;
    const deadline = AbortSignal.timeout(deadlineMs);
    let pending: Pending[] = [];
    for (const event of events) {
      const entry = this.#entryOf(event);
      if (entrySize(entry) > putEventsBounds.bytes)
        this.#said(event, `its entry is over PutEvents' ${putEventsBounds.bytes} bytes`);
      else pending.push({ event, entry, reason: '' });
    }
    for (let attempt = 1; pending.length > 0 && attempt <= tries && !deadline.aborted; attempt += 1) {
      const failed: Pending[][] = await Promise.all(
        batchesOf(pending, (one) => one.entry).map(async (ones) => {
          try {
            const answer = await client.send(
              new PutEventsCommand({ Entries: ones.map((one) => one.entry) }),
              { abortSignal: deadline },
            );
            if (!answer.FailedEntryCount) return [];
            // each answer entry is at its request entry's index: an ErrorCode marks a failed one
            return ones.filter((one, index) => {
              const result = answer.Entries?.[index];
              if (!result?.ErrorCode) return false;
              one.reason = `${result.ErrorCode}${result.ErrorMessage ? `: ${result.ErrorMessage}` : ''}`;
              return true;
            });
          } catch (error) {
            for (const one of ones) one.reason = (error as Error).message;
            return ones;
          }
        }),
      );
      pending = failed.flat();
      if (pending.length > 0 && attempt < tries) await pause(backoffMs * 2 ** (attempt - 1), deadline);
    }
    for (const { event, reason } of pending)
      this.#said(event, deadline.aborted ? `not put within ${deadlineMs} ms: ${reason}` : reason);
  }

  #entryOf(event: MeshEvent): PutEventsRequestEntry {
    return {
      EventBusName: this.#options.busName,
      Source: eventSource,
      DetailType: event.type,
      Time: new Date(event.time),
      Detail: JSON.stringify(event.detail),
    };
  }

  #said(event: MeshEvent, reason: string) {
    logLine(this.#options.log, say(eventLines.notDelivered, { type: event.type, how: 'lost', reason }));
  }
}

/** Waits, or less when the deadline comes first. */
const pause = (ms: number, deadline: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    timer.unref();
    deadline.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      deadline.removeEventListener('abort', done);
      resolve();
    }
  });
