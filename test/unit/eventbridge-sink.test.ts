import type { PutEventsCommand, PutEventsResultEntry } from '@aws-sdk/client-eventbridge';
import { describe, expect, it } from 'vitest';
import {
  EventBridgeEventSink,
  entrySize,
  type PutEventsClient,
} from '../../lib/server/adapters/events/eventbridge-sink.ts';
import { type MeshEvent, tell } from '../../lib/server/core/events/events.ts';
import { RecordingLog } from '../support/control-fakes.ts';

type Call = {
  readonly entries: NonNullable<PutEventsCommand['input']['Entries']>;
  readonly signal?: AbortSignal;
};

/**
 * A typed fake of the SDK client's PutEvents: each call's entries kept, each answered by `answer`
 * (entries that fail carry an ErrorCode at their index, as EventBridge answers them).
 */
class FakeBus implements PutEventsClient {
  readonly calls: Call[] = [];
  readonly answer: (call: Call, index: number) => Promise<PutEventsResultEntry[]>;
  constructor(
    answer: (call: Call, index: number) => Promise<PutEventsResultEntry[]> = async (call) =>
      call.entries.map((_, i) => ({ EventId: `e${i}` })),
  ) {
    this.answer = answer;
  }
  async send(command: PutEventsCommand, options?: { readonly abortSignal?: AbortSignal }) {
    const call: Call = {
      entries: command.input.Entries ?? [],
      ...(options?.abortSignal ? { signal: options.abortSignal } : {}),
    };
    this.calls.push(call);
    const entries = await this.answer(call, this.calls.length - 1);
    return { FailedEntryCount: entries.filter((entry) => entry.ErrorCode).length, Entries: entries };
  }
}

const event = (node: string, extra: Record<string, string> = {}): MeshEvent => ({
  type: 'node.offline',
  time: '2026-12-06T03:00:00.000Z',
  detail: { node, ...extra },
});

const notDelivered = (log: RecordingLog) => log.coded.filter((line) => line.code === 'events.not-delivered');

describe('events put on the stack’s EventBridge bus', () => {
  it('puts them in calls of at most 10 entries, on the bus, from source mesh, with their detail-type', async () => {
    const bus = new FakeBus();
    const log = new RecordingLog();
    const sink = new EventBridgeEventSink({ client: bus, busName: 'mesh-events', log });
    await sink.publish(Array.from({ length: 23 }, (_, i) => event(`web${i}`)));

    expect(bus.calls.map((call) => call.entries.length)).toEqual([10, 10, 3]);
    expect(bus.calls[0]?.entries[0]).toEqual({
      EventBusName: 'mesh-events',
      Source: 'mesh',
      DetailType: 'node.offline',
      Time: new Date('2026-12-06T03:00:00.000Z'),
      Detail: '{"node":"web0"}',
    });
    expect(
      bus.calls.flatMap((call) => call.entries.map((entry) => JSON.parse(entry.Detail ?? '').node)),
    ).toEqual(Array.from({ length: 23 }, (_, i) => `web${i}`));
    expect(notDelivered(log)).toEqual([]);
  });

  it('keeps each call under 256 KB as EventBridge counts an entry, and lets go of an entry alone over it', async () => {
    const bus = new FakeBus();
    const log = new RecordingLog();
    const sink = new EventBridgeEventSink({ client: bus, busName: 'b', log });
    const big = (node: string) => event(node, { note: 'x'.repeat(100 * 1024) });
    await sink.publish([
      big('a'),
      big('b'),
      big('c'),
      event('d'),
      event('huge', { note: 'x'.repeat(256 * 1024) }),
    ]);

    expect(bus.calls.map((call) => call.entries.map((entry) => JSON.parse(entry.Detail ?? '').node))).toEqual(
      [
        ['a', 'b'],
        ['c', 'd'],
      ],
    );
    for (const call of bus.calls)
      expect(call.entries.reduce((sum, entry) => sum + entrySize(entry), 0)).toBeLessThanOrEqual(256 * 1024);
    expect(notDelivered(log).map((line) => line.fields.reason)).toEqual([
      expect.stringContaining('over PutEvents'),
    ]);
  });

  it('tries again only the entries a call failed, after a backoff, and says those that fail every try', async () => {
    // the first call throttles entries 1 and 3; after that entry 3 fails for good
    const bus = new FakeBus(async (call, index) =>
      call.entries.map((entry) => {
        const node = JSON.parse(entry.Detail ?? '').node;
        if ((index === 0 && node === 'n1') || node === 'n3')
          return { ErrorCode: 'ThrottlingException', ErrorMessage: 'slow down' };
        return { EventId: node };
      }),
    );
    const log = new RecordingLog();
    const sink = new EventBridgeEventSink({ client: bus, busName: 'b', log, tries: 3, backoffMs: 20 });
    const started = performance.now();
    await sink.publish(['n0', 'n1', 'n2', 'n3'].map((node) => event(node)));

    const nodesOf = (call: Call) => call.entries.map((entry) => JSON.parse(entry.Detail ?? '').node);
    expect(bus.calls.map(nodesOf)).toEqual([['n0', 'n1', 'n2', 'n3'], ['n1', 'n3'], ['n3']]);
    // 20 ms, then 40 ms between the three calls
    expect(performance.now() - started).toBeGreaterThanOrEqual(55);
    expect(notDelivered(log)).toEqual([
      expect.objectContaining({
        fields: expect.objectContaining({ type: 'node.offline', reason: 'ThrottlingException: slow down' }),
      }),
    ]);
  });

  it('never holds a change up past its deadline when the bus does not answer, and never throws', async () => {
    // a bus that answers nothing until the call is cancelled
    const bus = new FakeBus(
      (call) =>
        new Promise((_, reject) =>
          call.signal?.addEventListener('abort', () => reject(new Error('Request aborted')), { once: true }),
        ),
    );
    const log = new RecordingLog();
    const sink = new EventBridgeEventSink({ client: bus, busName: 'b', log, deadlineMs: 150 });
    const started = performance.now();
    await tell(sink, [event('a'), event('b')]);
    const took = performance.now() - started;

    expect(took).toBeLessThan(1_000);
    expect(bus.calls).toHaveLength(1);
    expect(notDelivered(log).map((line) => line.fields.reason)).toEqual([
      expect.stringContaining('not put within 150 ms'),
      expect.stringContaining('not put within 150 ms'),
    ]);
  });

  it('tries a call that threw again, whole', async () => {
    let down = true;
    const bus = new FakeBus(async (call) => {
      if (down) {
        down = false;
        throw new Error('connect ECONNREFUSED');
      }
      return call.entries.map(() => ({ EventId: 'x' }));
    });
    const log = new RecordingLog();
    await new EventBridgeEventSink({ client: bus, busName: 'b', log, backoffMs: 1 }).publish([event('a')]);
    expect(bus.calls).toHaveLength(2);
    expect(notDelivered(log)).toEqual([]);
  });
});
