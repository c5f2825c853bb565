import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { controlConsumerHandler } from '../../lib/server/api/handlers/control-consumer.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import type { ConsumerDeps } from '../../lib/server/core/control/consumer.ts';
import type { DeadLetterNote } from '../../lib/server/core/control/dead-letter-notes.ts';
import { defaultHoldPolicy } from '../../lib/server/core/control/hold.ts';
import { type ControlMessage, envelope, maxMessageBytes } from '../../lib/server/core/control/messages.ts';
import type { BuildStore, DeadLetterLog } from '../../lib/server/core/control/ports.ts';
import { upgradeMarginMs } from '../../lib/server/core/control/settle.ts';
import { ModuleNotFoundError } from '../../lib/server/core/mesh/errors.ts';
import type { PushAsker, PushFlow, PushRequest } from '../../lib/server/core/push/ports.ts';
import { StoreUnavailableError } from '../../lib/server/core/unavailable.ts';
import {
  InMemoryControlStore,
  InMemoryMesh,
  RecordingLog,
  RecordingSender,
  RecordingSettlement,
} from '../support/control-fakes.ts';

const t0 = Date.parse('2026-09-22T10:00:00Z');
const context = {} as Context;

function world(overrides: Partial<ConsumerDeps> = {}) {
  const store = new InMemoryControlStore();
  const mesh = new InMemoryMesh();
  const sender = new RecordingSender();
  const settlement = new RecordingSettlement();
  const log = new RecordingLog();
  const lost: string[] = [];
  let now = t0;
  const deps: ConsumerDeps = {
    reports: store.reportStore,
    builds: store.buildStore,
    moduleVersions: mesh,
    pushFlow: mesh,
    sender,
    settlement,
    log,
    now: () => new Date(now),
    clock: () => now,
    holdPolicy: defaultHoldPolicy,
    pushTimeoutMs: 50,
    countLost: (type) => lost.push(type),
    ...overrides,
  };
  const handler = controlConsumerHandler({ consumer: deps });
  return {
    deps,
    store,
    mesh,
    sender,
    settlement,
    log,
    lost,
    setNow: (ms: number) => {
      now = ms;
    },
    deliver: async (records: SQSRecord[]) =>
      (await handler({ Records: records } as SQSEvent, context)).batchItemFailures.map(
        (failure) => failure.itemIdentifier,
      ),
  };
}

type RecordOptions = { id: string; receiveCount?: number; firstReceivedAt?: number; group?: string };

function record(message: ControlMessage | string, options: RecordOptions): SQSRecord {
  const body = typeof message === 'string' ? message : JSON.stringify(message);
  const group = options.group ?? (typeof message === 'string' ? 'report:n1' : message.subject);
  return {
    messageId: options.id,
    receiptHandle: `receipt-${options.id}`,
    body,
    attributes: {
      ApproximateReceiveCount: String(options.receiveCount ?? 1),
      SentTimestamp: String(t0),
      SenderId: 'test',
      ApproximateFirstReceiveTimestamp: String(options.firstReceivedAt ?? t0),
      MessageGroupId: group,
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:control.fifo',
    awsRegion: 'us-east-1',
  };
}

const report = (
  node: string,
  sequence: number,
  state: 'applying' | 'applied' | 'failed' | 'heartbeat' = 'applied',
  revision = sequence,
) => envelope('report', { node, sequence, state, revision, sentAt: new Date(t0).toISOString() });
const build = (
  id: string,
  module = 'broker',
  version = '1.0.0',
  result: 'succeeded' | 'failed' = 'succeeded',
) => envelope('build', { id, module, version, result, finishedAt: new Date(t0).toISOString() }, new Date(t0));
const upgrade = (module: string, version: string) => envelope('upgrade', { module, version });
const catchUp = () => envelope('catch-up', {});

describe('reports', () => {
  it('are held while the store is away and recorded when it is back', async () => {
    // Prepare
    const w = world();
    w.store.down = true;
    // Act
    const held = await w.deliver([record(report('n1', 1), { id: 'm1' })]);
    w.store.down = false;
    w.setNow(t0 + 6_000);
    const again = await w.deliver([record(report('n1', 1), { id: 'm1', receiveCount: 2 })]);
    // Assess
    expect(held).toEqual(['m1']);
    expect(w.settlement.holds).toEqual([{ messageId: 'm1', visibilitySeconds: 5 }]);
    expect(again).toEqual([]);
    expect(w.store.reports.get('n1')?.sequence).toBe(1);
  });

  it('back off 5, 10, 20, 30 s by receive count', async () => {
    const w = world();
    w.store.down = true;
    for (const receiveCount of [1, 2, 3, 4, 5]) {
      await w.deliver([record(report('n1', 1), { id: `m${receiveCount}`, receiveCount })]);
    }
    expect(w.settlement.holds.map((hold) => hold.visibilitySeconds)).toEqual([5, 10, 20, 30, 30]);
  });

  it('held, then back beside a newer report of its node: set aside, and the newer one recorded', async () => {
    const w = world();
    w.store.down = true;
    expect(await w.deliver([record(report('n1', 1), { id: 'old' })])).toEqual(['old']);
    expect(w.settlement.holds.map((hold) => hold.messageId)).toEqual(['old']);

    w.store.down = false;
    w.setNow(t0 + 6_000);
    const failures = await w.deliver([
      record(report('n1', 1), { id: 'old', receiveCount: 2 }),
      record(report('n1', 2), { id: 'new' }),
    ]);

    expect(failures).toEqual([]);
    expect(w.store.reports.get('n1')).toMatchObject({ sequence: 2, state: 'applied', revision: 2 });
    expect(w.store.writes).toBe(1);
    expect(w.log.lines.map((line) => line.message)).toContain(
      'report report:n1: set aside by newer report 2 (applied)',
    );
  });

  it('are set aside by a newer report of the same node in the batch before any attempt, and the newer one waits in order', async () => {
    const w = world();
    w.store.down = true;
    const failures = await w.deliver([
      record(report('n1', 1), { id: 'old' }),
      record(report('n2', 7), { id: 'other' }),
      record(report('n1', 2), { id: 'new' }),
    ]);
    expect(failures).toEqual(['other', 'new']);

    w.store.down = false;
    const later = await w.deliver([record(report('n1', 2), { id: 'new', receiveCount: 2 })]);
    expect(later).toEqual([]);
    expect(w.store.reports.get('n1')?.sequence).toBe(2);
  });

  it('far ahead of the clock set nothing aside: they are rejected, and the real report of their node is recorded', async () => {
    // Prepare
    const w = world();
    // Act
    const failures = await w.deliver([
      record(report('n1', t0, 'applied', 3), { id: 'real' }),
      record(report('n1', 9e15, 'applied', 3), { id: 'ahead' }),
    ]);
    // Assess
    expect(failures).toEqual([]);
    expect(w.store.reports.get('n1')?.sequence).toBe(t0);
    expect(w.settlement.deadLetters).toEqual([
      expect.objectContaining({
        messageId: 'ahead',
        kind: 'rejected',
        reason: expect.stringMatching(/^rejected: report 9000000000000000 for n1 is ahead of the clock/),
      }),
    ]);
  });

  it('applied, then a heartbeat of the same node in one batch: the applied one is recorded, not set aside', async () => {
    // Prepare
    const w = world();
    // Act
    const failures = await w.deliver([
      record(report('n1', 4, 'applying', 7), { id: 'applying' }),
      record(report('n1', 5, 'applied', 7), { id: 'applied' }),
      record(report('n1', 6, 'heartbeat', 0), { id: 'heartbeat' }),
    ]);
    // Assess
    expect(failures).toEqual([]);
    expect(w.store.reports.get('n1')).toMatchObject({
      sequence: 6,
      state: 'applied',
      revision: 7,
      appliedRevision: 7,
    });
    expect(w.store.writes).toBe(2);
  });

  it('a heartbeat is set aside by a newer heartbeat or state report; a state report only by a newer one that writes all it does', async () => {
    const cases: Array<{
      batch: Array<ReturnType<typeof report>>;
      setAside: number[];
      kept: Record<string, unknown>;
    }> = [
      {
        batch: [report('n1', 1, 'heartbeat', 0), report('n1', 2, 'heartbeat', 0)],
        setAside: [1],
        kept: { sequence: 2 },
      },
      {
        batch: [report('n1', 1, 'heartbeat', 0), report('n1', 2, 'applying', 3)],
        setAside: [1],
        kept: { sequence: 2, state: 'applying' },
      },
      {
        batch: [report('n1', 1, 'applying', 3), report('n1', 2, 'failed', 3)],
        setAside: [1],
        kept: { sequence: 2, state: 'failed' },
      },
      {
        batch: [report('n1', 1, 'applying', 3), report('n1', 2, 'applied', 3)],
        setAside: [1],
        kept: { sequence: 2, state: 'applied', appliedRevision: 3 },
      },
      {
        // An applying report does not move the applied revision, so it cannot stand in for an applied one.
        batch: [report('n1', 1, 'applied', 3), report('n1', 2, 'applying', 4)],
        setAside: [],
        kept: { sequence: 2, state: 'applying', revision: 4, appliedRevision: 3 },
      },
      {
        batch: [report('n1', 1, 'failed', 3), report('n1', 2, 'heartbeat', 0)],
        setAside: [],
        kept: { sequence: 2, state: 'failed', revision: 3 },
      },
    ];
    for (const { batch, setAside, kept } of cases) {
      const w = world();
      await w.deliver(batch.map((message, index) => record(message, { id: `r${index + 1}` })));
      const label = batch.map((message) => `${message.body.sequence} ${message.body.state}`).join(', ');
      expect(w.store.writes, label).toBe(batch.length - setAside.length);
      expect(w.store.reports.get('n1'), label).toMatchObject(kept);
    }
  });

  it('carrying health are set aside only by a newer one that carries health; a revert never, being audited when recorded', async () => {
    const healthy = { state: 'healthy' as const, check: true, revision: 3 };
    const withHealth = (message: ReturnType<typeof report>, health = healthy) => ({
      ...message,
      body: { ...message.body, health },
    });
    const reverted = (message: ReturnType<typeof report>) => ({
      ...message,
      body: { ...message.body, health: healthy, revert: { to: 2, cause: 'unhealthy' as const, ok: true } },
    });
    const cases: Array<{ batch: Array<ReturnType<typeof report>>; setAside: number }> = [
      // An old host's report after a health report (never so in one host's stream, yet safe).
      { batch: [withHealth(report('n1', 1, 'heartbeat', 3)), report('n1', 2, 'applying', 4)], setAside: 0 },
      {
        batch: [withHealth(report('n1', 1, 'heartbeat', 3)), withHealth(report('n1', 2, 'applying', 4))],
        setAside: 1,
      },
      {
        batch: [reverted(report('n1', 1, 'failed', 3)), withHealth(report('n1', 2, 'failed', 3))],
        setAside: 0,
      },
      {
        batch: [reverted(report('n1', 1, 'failed', 3)), withHealth(report('n1', 2, 'applied', 5))],
        setAside: 0,
      },
    ];
    for (const { batch, setAside } of cases) {
      const w = world();
      await w.deliver(batch.map((message, index) => record(message, { id: `r${index + 1}` })));
      const label = batch
        .map(
          (message) =>
            `${message.body.sequence} ${message.body.state}${message.body.health ? '+health' : ''}`,
        )
        .join(', ');
      expect(w.store.writes, label).toBe(batch.length - setAside);
    }
  });

  it('recorded late never overwrite a newer one', async () => {
    const w = world();
    await w.deliver([record(report('n1', 5), { id: 'new' })]);
    const failures = await w.deliver([record(report('n1', 3, 'applying'), { id: 'old' })]);
    expect(failures).toEqual([]);
    expect(w.store.reports.get('n1')).toMatchObject({ sequence: 5, state: 'applied' });
  });

  it('are let go past the bound: dead-lettered, a lost line, a metric, acknowledged', async () => {
    const w = world();
    w.store.down = true;
    w.setNow(t0 + 121_000);
    const failures = await w.deliver([
      record(report('n1', 4), { id: 'm1', receiveCount: 9, firstReceivedAt: t0 }),
      record(report('n9', 5), { id: 'm2', firstReceivedAt: t0 + 120_000 }),
    ]);
    expect(failures).toEqual(['m2']);
    expect(w.settlement.deadLetters).toEqual([
      expect.objectContaining({ messageId: 'm1', kind: 'lost', type: 'report', subject: 'report:n1' }),
    ]);
    expect(w.log.lines).toContainEqual({
      level: 'error',
      message: 'lost report report:n1 after 121 s: recording a report: Error (connect ECONNREFUSED)',
    });
    expect(w.lost).toEqual(['report']);
  });

  it('near the bound wait no longer than the time left', async () => {
    const w = world();
    w.store.down = true;
    w.setNow(t0 + 117_500);
    await w.deliver([record(report('n1', 1), { id: 'm1', receiveCount: 6 })]);
    expect(w.settlement.holds).toEqual([{ messageId: 'm1', visibilitySeconds: 3 }]);
  });
});

describe('a batch with several messages of one subject failing part-way', () => {
  it('returns exactly the failed message and the rest of its subject, in order; other subjects go on', async () => {
    // Prepare: the store fails on the second attempt at build x only.
    const store = new InMemoryControlStore();
    let attemptsOnX = 0;
    const builds: BuildStore = {
      ...store.buildStore,
      recordBuild: async (body, times) => {
        if (body.id === 'x' && ++attemptsOnX === 2) throw new StoreUnavailableError('recording a build');
        return store.buildStore.recordBuild(body, times, localActor());
      },
    };
    const w = world({ builds });
    // Act
    const failures = await w.deliver([
      record(build('x'), { id: 'x1' }),
      record(build('y'), { id: 'y1' }),
      record(build('x'), { id: 'x2' }),
      record(report('n1', 1), { id: 'r1' }),
      record(build('x'), { id: 'x3' }),
      record(build('y'), { id: 'y2' }),
      record(build('x'), { id: 'x4' }),
    ]);
    // Assess
    expect(failures).toEqual(['x2', 'x3', 'x4']);
    expect(attemptsOnX).toBe(2);
    expect(w.settlement.holds).toEqual([
      { messageId: 'x2', visibilitySeconds: 5 },
      { messageId: 'x3', visibilitySeconds: 5 },
      { messageId: 'x4', visibilitySeconds: 5 },
    ]);
    expect([...store.builds.keys()].sort()).toEqual(['x', 'y']);
    expect(w.store.reports.get('n1')?.sequence).toBe(1);
  });

  it('returns the whole batch when every subject is held, without throwing', async () => {
    const w = world();
    w.store.down = true;
    const failures = await w.deliver([
      record(report('a', 1), { id: 'a' }),
      record(build('b'), { id: 'b' }),
      record(catchUp(), { id: 'c' }),
    ]);
    expect(failures).toEqual(['a', 'b', 'c']);
  });
});

describe('malformed messages', () => {
  const cases: Array<[string, string, RegExp]> = [
    ['bad JSON', '{"type":', /^bad JSON/],
    [
      'unknown type',
      JSON.stringify({ type: 'reboot', subject: 'report:n1', sentAt: new Date(t0).toISOString(), body: {} }),
      /^unknown type/,
    ],
    [
      'schema failure',
      JSON.stringify({ ...report('n1', 1), body: { ...report('n1', 1).body, sequence: -1 } }),
      /^schema: body\.sequence/,
    ],
    ['oversize', JSON.stringify({ ...report('n1', 1), pad: 'x'.repeat(maxMessageBytes) }), /^oversize/],
    [
      'subject not its group',
      JSON.stringify(report('n2', 1)),
      /^schema: subject report:n2 is not the message group report:n1/,
    ],
  ];

  for (const [name, body, reason] of cases) {
    it(`(${name}) goes to the dead-letter queue with its reason while the next of its group is processed`, async () => {
      const w = world();
      const failures = await w.deliver([
        record(body, { id: 'bad', group: 'report:n1' }),
        record(report('n1', 2), { id: 'next' }),
      ]);
      expect(failures).toEqual([]);
      expect(w.settlement.deadLetters).toEqual([
        expect.objectContaining({
          messageId: 'bad',
          kind: 'malformed',
          reason: expect.stringMatching(reason),
        }),
      ]);
      expect(w.store.reports.get('n1')?.sequence).toBe(2);
    });
  }

  it('is held, not dropped, when the dead-letter queue cannot take it; its group goes on', async () => {
    const settlement = new RecordingSettlement();
    const w = world({
      settlement: {
        hold: (record, seconds) => settlement.hold(record, seconds),
        deadLetter: async () => {
          throw new Error('dead-letter queue unreachable');
        },
      },
    });
    const failures = await w.deliver([
      record('nope', { id: 'bad', group: 'report:n1' }),
      record(report('n1', 2), { id: 'next' }),
    ]);
    expect(failures).toEqual(['bad']);
    expect(w.store.reports.get('n1')?.sequence).toBe(2);
  });
});

describe('a dead-letter queue that will not take a copy', () => {
  const refusing = (holds = new RecordingSettlement()) => ({
    hold: (record: Parameters<RecordingSettlement['hold']>[0], seconds: number) =>
      holds.hold(record, seconds),
    deadLetter: async () => {
      throw Object.assign(new Error('not authorized to send'), { name: 'AccessDenied' });
    },
  });

  it('holds a malformed message under the bound, by its receive count, without holding its group', async () => {
    const holds = new RecordingSettlement();
    const w = world({ settlement: refusing(holds) });
    w.setNow(t0 + 40_000);
    const failures = await w.deliver([
      record('nope', { id: 'bad', group: 'report:n1', receiveCount: 3 }),
      record(report('n1', 2), { id: 'next' }),
    ]);
    expect(failures).toEqual(['bad']);
    expect(holds.holds).toEqual([{ messageId: 'bad', visibilitySeconds: 20 }]);
    expect(w.store.reports.get('n1')?.sequence).toBe(2);
    expect(w.lost).toEqual([]);
  });

  it('lets a malformed message go past the bound, with a lost line and the metric', async () => {
    const w = world({ settlement: refusing() });
    w.setNow(t0 + 121_000);
    const failures = await w.deliver([record('nope', { id: 'bad', group: 'report:n1', receiveCount: 7 })]);
    expect(failures).toEqual([]);
    expect(w.log.lines).toContainEqual({
      level: 'error',
      message: expect.stringMatching(
        /^lost message report:n1 after 121 s: could not dead-letter it \(malformed: bad JSON.*\): AccessDenied/,
      ),
    });
    expect(w.lost).toEqual(['unknown']);
  });

  it('holds a rejected upgrade under the bound, and lets it go past the bound', async () => {
    const moduleVersions = {
      setModuleVersion: async (module: string) => {
        throw new ModuleNotFoundError(module);
      },
      moveCarriers: async () => undefined,
      isKnown: async () => true,
    };
    const holds = new RecordingSettlement();
    const w = world({ settlement: refusing(holds), moduleVersions });
    const held = await w.deliver([record(upgrade('ghost', '2'), { id: 'u2' })]);
    expect(held).toEqual(['u2']);
    expect(holds.holds).toEqual([{ messageId: 'u2', visibilitySeconds: 5 }]);
    expect(w.lost).toEqual([]);

    w.setNow(t0 + 125_000);
    const later = await w.deliver([record(upgrade('ghost', '2'), { id: 'u2', receiveCount: 8 })]);
    expect(later).toEqual([]);
    expect(w.log.lines).toContainEqual({
      level: 'error',
      message: expect.stringMatching(
        /^lost upgrade upgrade:ghost after 125 s: could not dead-letter it \(rejected: setting ghost to 2: no module named ghost[^)]*\): AccessDenied/,
      ),
    });
    expect(w.lost).toEqual(['upgrade']);
  });

  it('lets a message the store could not take go past the bound even without its copy, counted once', async () => {
    const w = world({ settlement: refusing() });
    w.store.down = true;
    w.setNow(t0 + 121_000);
    const failures = await w.deliver([record(report('n1', 4), { id: 'm1', receiveCount: 9 })]);
    expect(failures).toEqual([]);
    expect(w.log.lines.filter((line) => line.message.startsWith('lost '))).toEqual([
      {
        level: 'error',
        message:
          'lost report report:n1 after 121 s: recording a report: Error (connect ECONNREFUSED); could not dead-letter it: AccessDenied (not authorized to send)',
      },
    ]);
    expect(w.lost).toEqual(['report']);
  });
});

describe('build results', () => {
  it('are held on a store failure and recorded once otherwise; a repeat is ignored', async () => {
    const w = world();
    w.store.down = true;
    expect(await w.deliver([record(build('b1'), { id: 'm1' })])).toEqual(['m1']);
    w.store.down = false;
    expect(await w.deliver([record(build('b1'), { id: 'm1', receiveCount: 2 })])).toEqual([]);
    expect(await w.deliver([record(build('b1', 'broker', '9.9.9', 'failed'), { id: 'm2' })])).toEqual([]);
    expect(w.store.builds.get('b1')).toMatchObject({ version: '1.0.0', result: 'succeeded' });
  });
});

describe('catch-up', () => {
  it('is held on a store failure and acknowledged only after re-announcing each module’s latest successful build', async () => {
    const w = world();
    await w.deliver([
      record(build('b1', 'broker', '1.0.0'), { id: 'b1' }),
      record(build('b2', 'broker', '1.1.0'), { id: 'b2' }),
      record(build('b3', 'broker', '2.0.0', 'failed'), { id: 'b3' }),
      record(build('d1', 'db', '5'), { id: 'd1' }),
    ]);
    const b2 = w.store.builds.get('b2');
    if (b2) w.store.builds.set('b2', { ...b2, receivedAt: new Date(t0 + 1000).toISOString() });
    w.store.down = true;
    expect(await w.deliver([record(catchUp(), { id: 'c1' })])).toEqual(['c1']);
    expect(w.sender.sent).toEqual([]);

    w.store.down = false;
    expect(await w.deliver([record(catchUp(), { id: 'c1', receiveCount: 2 })])).toEqual([]);
    expect(w.sender.sent.map((outgoing) => [outgoing.message.subject, outgoing.message.body])).toEqual([
      ['upgrade:broker', { module: 'broker', version: '1.1.0' }],
      ['upgrade:db', { module: 'db', version: '5' }],
    ]);
  });

  it('is held when the control queue cannot take the announcements', async () => {
    const w = world({
      sender: {
        send: async () => {
          throw new StoreUnavailableError('putting messages on the control queue');
        },
      },
    });
    await w.deliver([record(build('b1'), { id: 'b1' })]);
    expect(await w.deliver([record(catchUp(), { id: 'c1' })])).toEqual(['c1']);
  });
});

describe('upgrades', () => {
  it('are held when setting the version fails, and the push is not tried', async () => {
    const w = world();
    w.mesh.down = true;
    expect(await w.deliver([record(upgrade('broker', '2.0.0'), { id: 'u1' })])).toEqual(['u1']);
    expect(w.mesh.pushes).toBe(0);
  });

  it("are held on the mesh store's own unavailable error", async () => {
    const w = world({
      moduleVersions: {
        setModuleVersion: async () => {
          throw new StoreUnavailableError('the inventory table');
        },
        moveCarriers: async () => undefined,
        isKnown: async () => true,
      },
    });
    expect(await w.deliver([record(upgrade('broker', '2.0.0'), { id: 'u1' })])).toEqual(['u1']);
  });

  it('of an unknown module are dead-lettered as rejected at once, not held, and nothing is pushed', async () => {
    const w = world({
      moduleVersions: {
        setModuleVersion: async (module) => {
          throw new ModuleNotFoundError(module);
        },
        moveCarriers: async () => undefined,
        isKnown: async () => true,
      },
    });
    expect(await w.deliver([record(upgrade('ghost', '2.0.0'), { id: 'u1' })])).toEqual([]);
    expect(w.settlement.holds).toEqual([]);
    expect(w.settlement.deadLetters).toEqual([
      expect.objectContaining({
        messageId: 'u1',
        kind: 'rejected',
        type: 'upgrade',
        subject: 'upgrade:ghost',
        reason: expect.stringMatching(/^rejected: setting ghost to 2\.0\.0: no module named ghost/),
      }),
    ]);
    expect(w.mesh.pushes).toBe(0);
  });

  it('are held, not dead-lettered, on an error nobody foresaw', async () => {
    const w = world({
      moduleVersions: {
        setModuleVersion: async () => {
          throw new TypeError('cannot read properties of undefined');
        },
        moveCarriers: async () => undefined,
        isKnown: async () => true,
      },
    });
    expect(await w.deliver([record(upgrade('broker', '2.0.0'), { id: 'u1' })])).toEqual(['u1']);
    expect(w.settlement.deadLetters).toEqual([]);
    expect(w.settlement.holds).toEqual([{ messageId: 'u1', visibilitySeconds: 5 }]);
  });

  it('set the version and push the nodes behind', async () => {
    const w = world();
    expect(await w.deliver([record(upgrade('broker', '2.0.0'), { id: 'u1' })])).toEqual([]);
    expect(w.mesh.versions.get('broker')).toBe('2.0.0');
    expect(w.mesh.pushes).toBe(1);
  });

  it('are not held on a push that timed out or failed: logged and acknowledged', async () => {
    for (const behaviour of ['hang', 'fail'] as const) {
      const w = world();
      w.mesh.pushBehaviour = behaviour;
      expect(await w.deliver([record(upgrade('broker', '2.0.0'), { id: 'u1' })])).toEqual([]);
      expect(w.mesh.versions.get('broker')).toBe('2.0.0');
      expect(w.settlement.holds).toEqual([]);
      expect(
        w.log.lines.some(
          (line) => line.level === 'warn' && /push after upgrading broker failed/.test(line.message),
        ),
      ).toBe(true);
    }
  });

  it('move what fits the invocation and send the rest as a follow-up from where it stopped, pushing once after the last', async () => {
    const w = world();
    w.mesh.carriers = Array.from({ length: 25 }, (_, i) => `n${i}`);
    w.mesh.carriersPerPass = 10;
    const timed = { getRemainingTimeInMillis: () => 30_000 } as Context;
    const handler = controlConsumerHandler({ consumer: w.deps });
    let next: SQSRecord | undefined = record(upgrade('broker', '2.0.0'), { id: 'u1' });
    let passes = 0;
    while (next) {
      const answer = await handler({ Records: [next] } as SQSEvent, timed);
      expect(answer.batchItemFailures).toEqual([]);
      passes += 1;
      const sent = w.sender.sent.at(-1);
      next =
        w.sender.sent.length === passes
          ? record(sent?.message as ControlMessage, { id: `u${passes + 1}` })
          : undefined;
    }
    expect(passes).toBe(3);
    // each follow-up goes on after the last carrier the pass before walked
    expect(w.sender.sent.map((m) => m.message.body)).toEqual([
      { module: 'broker', version: '2.0.0', continues: true, after: 'n9' },
      { module: 'broker', version: '2.0.0', continues: true, after: 'n19' },
    ]);
    expect(w.mesh.passes.map((pass) => pass.after)).toEqual([undefined, 'n9', 'n19']);
    expect(new Set(w.mesh.movedTo.get('broker')?.values())).toEqual(new Set(['2.0.0']));
    expect(w.mesh.movedTo.get('broker')?.size).toBe(25);
    expect(w.mesh.pushes).toBe(1);
    // the deadline each pass is given keeps the push's time and a margin back
    expect(w.mesh.passes[0]?.until).toBe(t0 + 30_000 - 50 - upgradeMarginMs);
  });

  it('leave the push to a follow-up when moving the carriers overran the time the push needs', async () => {
    const w = world();
    const handler = controlConsumerHandler({ consumer: w.deps });
    // the pass ran long: 30 s left when it began, 1 s when it ended
    const left = [30_000, 1_000];
    const overrun = { getRemainingTimeInMillis: () => left.shift() ?? 1_000 } as Context;
    await handler({ Records: [record(upgrade('broker', '2.0.0'), { id: 'u1' })] } as SQSEvent, overrun);
    expect(w.mesh.pushes).toBe(0);
    const [rest] = w.sender.sent;
    expect(rest?.message.body).toEqual({ module: 'broker', version: '2.0.0', continues: true });
    const fresh = { getRemainingTimeInMillis: () => 30_000 } as Context;
    await handler({ Records: [record(rest?.message as ControlMessage, { id: 'u2' })] } as SQSEvent, fresh);
    expect(w.mesh.pushes).toBe(1);
    expect(w.sender.sent).toHaveLength(1);
  });

  it("leave the rest of an upgrade a newer one overtook to the newer one's pass", async () => {
    const w = world();
    w.mesh.versions.set('broker', '3.0.0');
    const rest = envelope('upgrade', { module: 'broker', version: '2.0.0', continues: true });
    expect(await w.deliver([record(rest, { id: 'u9' })])).toEqual([]);
    expect(w.mesh.versions.get('broker')).toBe('3.0.0');
    expect(w.mesh.pushes).toBe(0);
    expect(w.sender.sent).toEqual([]);
  });

  it('an older upgrade of a module is set aside by a newer one in the batch', async () => {
    const w = world();
    await w.deliver([
      record(upgrade('broker', '2.0.0'), { id: 'u1' }),
      record(upgrade('broker', '3.0.0'), { id: 'u2' }),
    ]);
    expect(w.mesh.versions.get('broker')).toBe('3.0.0');
    expect(w.mesh.pushes).toBe(1);
  });
});

describe('every message type delivered three times', () => {
  it('leaves the same state as once', async () => {
    const messages = [
      record(report('n1', 3), { id: 'r' }),
      record(build('b1', 'broker', '1.2.0'), { id: 'b' }),
      record(upgrade('broker', '1.2.0'), { id: 'u' }),
      record(catchUp(), { id: 'c' }),
    ];
    const once = world();
    const thrice = world();
    for (const message of messages) await once.deliver([message]);
    for (const message of messages) for (let n = 0; n < 3; n += 1) await thrice.deliver([message]);

    expect([...thrice.store.reports]).toEqual([...once.store.reports]);
    expect([...thrice.store.builds]).toEqual([...once.store.builds]);
    expect([...thrice.mesh.versions]).toEqual([...once.mesh.versions]);
    expect(thrice.sender.sent).toEqual(once.sender.sent);
  });
});

describe('the dead-letter list', () => {
  const noted = () => {
    const notes: DeadLetterNote[] = [];
    const letters: DeadLetterLog = {
      note: async (note) => {
        notes.push(note);
      },
    };
    return { notes, letters };
  };

  it('notes a malformed message with its reason, its copy on the dead-letter queue and its body', async () => {
    const { notes, letters } = noted();
    const w = world({ deadLetterNotes: letters });
    await w.deliver([record('{not json', { id: 'bad', group: 'report:n1' })]);
    expect(notes).toEqual([
      expect.objectContaining({
        messageId: 'bad',
        kind: 'malformed',
        reason: expect.stringMatching(/^bad JSON/),
        copied: true,
        body: '{not json',
        bodyBytes: 9,
        firstReceivedAt: new Date(t0).toISOString(),
      }),
    ]);
  });

  it('notes a message let go without its copy as lost and not copied', async () => {
    const { notes, letters } = noted();
    const w = world({
      deadLetterNotes: letters,
      settlement: {
        hold: async () => {},
        deadLetter: async () => {
          throw Object.assign(new Error('not authorized to send'), { name: 'AccessDenied' });
        },
      },
    });
    w.store.down = true;
    w.setNow(t0 + 121_000);
    await w.deliver([record(report('n1', 4), { id: 'm1', receiveCount: 9 })]);
    expect(notes).toEqual([
      expect.objectContaining({
        messageId: 'm1',
        kind: 'lost',
        type: 'report',
        subject: 'report:n1',
        copied: false,
        reason: expect.stringMatching(/could not dead-letter it: AccessDenied/),
      }),
    ]);
  });

  it('a note the store will not take changes nothing else: the copy is made and the message acknowledged', async () => {
    const w = world({
      deadLetterNotes: {
        note: async () => {
          throw new StoreUnavailableError('the inventory table');
        },
      },
    });
    const failures = await w.deliver([record('{not json', { id: 'bad', group: 'report:n1' })]);
    expect(failures).toEqual([]);
    expect(w.settlement.deadLetters).toHaveLength(1);
    expect(w.log.lines).toContainEqual({
      level: 'warn',
      message: 'could not note bad in the dead-letter list',
    });
  });
});

describe("an upgrade's push", () => {
  it('says who asked: upgrade <module>', async () => {
    const asked: Array<{ request: PushRequest; asker: PushAsker | undefined }> = [];
    const pushFlow: PushFlow = {
      push: async (request, asker) => {
        asked.push({ request, asker });
        return { pushed: null, flushed: [], rounds: 0, behind: [] };
      },
    };
    const w = world({ pushFlow });
    await w.deliver([record(upgrade('broker', '2.0.0'), { id: 'u1' })]);
    expect(asked).toEqual([{ request: { behind: true }, asker: { requestedBy: 'upgrade broker' } }]);
  });
});
