import { describe, expect, it } from 'vitest';
import {
  advance,
  type Facts,
  maxTurnedUnhealthy,
  type NodeFacts,
} from '../../lib/server/core/rollout/advance.ts';
import { aborted } from '../../lib/server/core/rollout/claims.ts';
import { RolloutStateError, RolloutUsageError } from '../../lib/server/core/rollout/errors.ts';
import {
  newRollout,
  notSent,
  type RolloutRecord,
  resumed,
  waveSent,
} from '../../lib/server/core/rollout/record.ts';
import {
  cutWaves,
  parseMaxFailures,
  parseWaves,
  parseWaveTimeout,
  rolloutOptions,
} from '../../lib/server/core/rollout/waves.ts';

const nodes = (n: number) => Array.from({ length: n }, (_, i) => `n${String(i).padStart(4, '0')}`);
const t0 = new Date('2026-01-01T00:00:00Z');
const later = (seconds: number) => new Date(t0.getTime() + seconds * 1000);

function rollout(count: number, given: Parameters<typeof rolloutOptions>[0]): RolloutRecord {
  return newRollout({
    id: 'r1',
    origin: { kind: 'upgrade', module: 'web', version: '2.0-bad' },
    nodes: nodes(count),
    rollout: rolloutOptions(given),
    now: t0.toISOString(),
  });
}

/** Sends the wave the record asks for, each node at revision 2. */
function sendWave(record: RolloutRecord, at = t0): RolloutRecord {
  const { decision } = advance(record, new Map(), at);
  if (decision.kind !== 'send') throw new Error(`expected a send, got ${decision.kind}`);
  return waveSent(
    record,
    decision.wave,
    decision.nodes.map((node) => ({ node, revision: 2 })),
    at.toISOString(),
  );
}

const reports = (record: RolloutRecord, facts: (node: string) => NodeFacts): Facts =>
  new Map(record.waves.flatMap((w) => w.nodes ?? []).map((n) => [n.node, facts(n.node)]));
const applied: NodeFacts = { report: { revision: 2, state: 'applied' }, online: true };

describe('parseWaves', () => {
  it('reads counts and percentages, cumulative', () => {
    expect(parseWaves('1,10%,100%')).toEqual([{ count: 1 }, { percent: 10 }, { percent: 100 }]);
  });
  it.each(['', '0', '1,,2', '10%,5%', '3,2', 'ten', '101%', '-1', '0%'])(
    'refuses %j with a usage error',
    (text) => {
      expect(() => parseWaves(text)).toThrow(RolloutUsageError);
    },
  );
  it('reads --max-failures and --wave-timeout', () => {
    expect(parseMaxFailures('0')).toEqual({ count: 0 });
    expect(parseMaxFailures('5%')).toEqual({ percent: 5 });
    expect(parseWaveTimeout('10m')).toBe(600);
    expect(parseWaveTimeout('90')).toBe(90);
    expect(() => parseWaveTimeout('10 minutes')).toThrow(RolloutUsageError);
  });
});

describe('cutWaves', () => {
  it('1%,10%,100% of 1,000 is 10, 90, 900', () => {
    expect(cutWaves(nodes(1000), parseWaves('1%,10%,100%')).map((w) => w.length)).toEqual([10, 90, 900]);
  });
  it('the last wave takes the rest, and waves left empty are dropped', () => {
    expect(cutWaves(nodes(6), parseWaves('1,2')).map((w) => w.length)).toEqual([1, 5]);
    expect(cutWaves(nodes(2), parseWaves('5,10,20')).map((w) => w.length)).toEqual([2]);
    expect(cutWaves(nodes(10), parseWaves('1%,100%')).map((w) => w.length)).toEqual([1, 9]);
  });
});

describe('advance', () => {
  it('sends wave by wave, waiting for each node to apply the revision it was sent', () => {
    let record = sendWave(rollout(6, { waves: '1,100%' }));
    expect(advance(record, new Map(), later(5)).decision).toEqual({
      kind: 'wait',
      until: later(600).toISOString(),
    });
    const stale = reports(record, () => ({ report: { revision: 1, state: 'applied' } }));
    expect(advance(record, stale, later(5)).decision.kind).toBe('wait');

    const next = advance(
      record,
      reports(record, () => applied),
      later(5),
    );
    expect(next.decision).toEqual({ kind: 'send', wave: 1, nodes: nodes(6).slice(1) });
    record = sendWave(next.record, later(5));
    const done = advance(
      record,
      reports(record, () => applied),
      later(9),
    );
    expect(done.decision).toEqual({ kind: 'done' });
    expect(done.record.state).toBe('done');
  });

  it('halts on the first failure past the bound, naming the failed node and its step', () => {
    const record = sendWave(rollout(6, { waves: '1,100%', maxFailures: '0' }));
    const failed = reports(record, () => ({
      report: { revision: 2, state: 'failed', step: 'hook exited 1' },
    }));
    const { record: halted, decision } = advance(record, failed, later(3));
    expect(decision.kind).toBe('halted');
    expect(halted.state).toBe('halted');
    expect(halted.reason).toContain('n0000 failed at hook exited 1');
    expect(notSent(halted)).toEqual(nodes(6).slice(1));
    expect(advance(halted, failed, later(4)).decision).toEqual({ kind: 'idle' });
  });

  it('bears failures up to --max-failures', () => {
    const record = sendWave(rollout(10, { waves: '5,100%', maxFailures: '20%' }));
    const someFail = reports(record, (node) =>
      node === 'n0000' || node === 'n0001' ? { report: { revision: 2, state: 'failed' } } : applied,
    );
    expect(advance(record, someFail, later(1)).decision.kind).toBe('send');
    const threeFail = reports(record, (node) =>
      node <= 'n0002' ? { report: { revision: 2, state: 'failed' } } : applied,
    );
    expect(advance(record, threeFail, later(1)).decision.kind).toBe('halted');
  });

  it('after the timeout, the nodes that never answered count as failures; offline ones are named so', () => {
    const record = sendWave(rollout(4, { waves: '2,100%', waveTimeout: '60s', maxFailures: '1' }));
    const facts = reports(record, (node) => (node === 'n0000' ? applied : { online: false }));
    const before = advance(record, facts, later(30));
    expect(before.decision.kind).toBe('wait');
    expect(before.record.waves[0]?.nodes?.[1]).toMatchObject({ node: 'n0001', state: 'offline' });
    const after = advance(before.record, facts, later(61));
    expect(after.record.waves[0]?.nodes?.[1]).toMatchObject({ state: 'timed-out', step: 'offline' });
    expect(after.decision.kind).toBe('send');
    const none = advance(record, new Map(), later(61));
    expect(none.decision.kind).toBe('halted');
    expect(none.record.reason).toMatch(/^wave 1 timed out: 2 failures/);
  });

  it('pauses between waves until resumed', () => {
    const record = sendWave(rollout(3, { waves: '1,100%', pause: true }));
    const paused = advance(
      record,
      reports(record, () => applied),
      later(1),
    );
    expect(paused.decision.kind).toBe('paused');
    expect(advance(paused.record, new Map(), later(2)).decision).toEqual({ kind: 'idle' });
    const going = resumed(paused.record, later(3).toISOString());
    expect(advance(going, new Map(), later(3)).decision).toMatchObject({ kind: 'send', wave: 1 });
  });

  it('a halted rollout resumed bears the failures it halted on, and aborts refuse twice', () => {
    const record = sendWave(rollout(3, { waves: '1,100%' }));
    const halted = advance(
      record,
      reports(record, () => ({ report: { revision: 2, state: 'failed' } })),
      later(1),
    );
    const going = resumed(halted.record, later(2).toISOString());
    expect(advance(going, new Map(), later(2)).decision.kind).toBe('send');
    const stopped = aborted(going, later(3).toISOString());
    expect(() => aborted(stopped, later(4).toISOString())).toThrow(RolloutStateError);
    expect(() => resumed(stopped, later(4).toISOString())).toThrow(RolloutStateError);
  });

  it('providers paired with a wave are moved into it from a later wave, or join it as paired', () => {
    const record = rollout(4, { waves: '1,100%' });
    const sent = waveSent(
      record,
      0,
      [
        { node: 'n0000', revision: 2 },
        { node: 'n0003', revision: 5 },
        { node: 'other', revision: 1 },
      ],
      t0.toISOString(),
    );
    expect(sent.waves[0]?.nodes).toEqual([
      { node: 'n0000', state: 'waiting', revision: 2 },
      { node: 'n0003', state: 'waiting', revision: 5 },
      { node: 'other', state: 'waiting', revision: 1, paired: true },
    ]);
    expect(sent.waves[1]?.nodes?.map((n) => n.node)).toEqual(['n0001', 'n0002']);
  });

  it('is idempotent: the same facts twice decide the same', () => {
    const record = sendWave(rollout(5, { waves: '2,100%' }));
    const facts = reports(record, (node) => (node === 'n0000' ? applied : {}));
    expect(advance(record, facts, later(9))).toEqual(advance(record, facts, later(9)));
    const once = advance(record, facts, later(9)).record;
    expect(advance(once, facts, later(9)).record).toBe(once);
  });
});

describe('advance: health', () => {
  const checked = (
    state: 'healthy' | 'unhealthy' | 'unknown',
    revision = 2,
    more: Partial<NodeFacts['health'] & object> = {},
  ): NodeFacts => ({
    ...applied,
    health: {
      state,
      check: true,
      revision,
      ...(state === 'unhealthy' ? { reason: 'curl: (7) refused' } : {}),
      ...more,
    },
  });

  it('a wave waits for a node with a check until its verdict on the revision it was sent is healthy', () => {
    const record = sendWave(rollout(3, { waves: '1,100%' }));
    const checking = advance(
      record,
      reports(record, () => checked('unknown')),
      later(5),
    );
    const olderVerdict = advance(
      record,
      reports(record, () => checked('healthy', 1)),
      later(5),
    );
    const healthy = advance(
      record,
      reports(record, () => checked('healthy')),
      later(5),
    );

    expect(checking.decision.kind).toBe('wait');
    expect(checking.record.waves[0]?.nodes?.[0]).toMatchObject({ node: 'n0000', state: 'waiting' });
    expect(olderVerdict.decision.kind).toBe('wait');
    expect(healthy.decision).toMatchObject({ kind: 'send', wave: 1 });
  });

  it('a node with no check, or a host that reports no health, is done when applied', () => {
    const record = sendWave(rollout(3, { waves: '1,100%' }));
    const noCheck: NodeFacts = { ...applied, health: { state: 'unknown', check: false, revision: 2 } };
    expect(
      advance(
        record,
        reports(record, () => noCheck),
        later(5),
      ).decision.kind,
    ).toBe('send');
    expect(
      advance(
        record,
        reports(record, () => applied),
        later(5),
      ).decision.kind,
    ).toBe('send');
  });

  it('applied but unhealthy is a failure whose step is the first line of why', () => {
    const record = sendWave(rollout(3, { waves: '1,100%', maxFailures: '0' }));
    const { record: halted, decision } = advance(
      record,
      reports(record, () => checked('unhealthy')),
      later(5),
    );

    expect(decision.kind).toBe('halted');
    expect(halted.waves[0]?.nodes?.[0]).toMatchObject({
      state: 'failed',
      step: 'unhealthy: curl: (7) refused',
    });
    expect(halted.reason).toContain('n0000 failed at unhealthy: curl: (7) refused');
  });

  it('a node of the wave in flight that applied, then turned unhealthy, fails', () => {
    let record = sendWave(rollout(6, { waves: '3,100%', maxFailures: '1' }));
    // n0000 and n0001 applied and healthy, n0002 still checking: the wave waits.
    const first = advance(
      record,
      reports(record, (node) => checked(node === 'n0002' ? 'unknown' : 'healthy')),
      later(5),
    );
    expect(first.decision.kind).toBe('wait');
    record = first.record;
    // n0002 is still waited on (asked for); n0000 is found on the unhealthy list.
    const facts: Facts = new Map([
      ['n0002', checked('unknown')],
      ['n0000', { health: checked('unhealthy').health, heldBy: { rollout: 'r1', wave: 0 } } as NodeFacts],
    ]);
    const turned = advance(record, facts, later(8));

    expect(turned.decision.kind).toBe('wait');
    expect(turned.record.waves[0]?.nodes?.map((n) => n.state)).toEqual(['failed', 'applied', 'waiting']);
  });

  it('a node of a wave already done that turned unhealthy since counts once as a failure, and past the bound halts', () => {
    let record = sendWave(rollout(6, { waves: '1,3,100%', maxFailures: '1' }));
    record = advance(
      record,
      reports(record, () => checked('healthy')),
      later(5),
    ).record;
    record = sendWave(record, later(5));
    const endedAt = record.waves[0]?.endedAt ?? '';
    const found = (node: string, since: string, rollout = 'r1', wave = 0): [string, NodeFacts] => [
      node,
      {
        health: checked('unhealthy', 2, { unhealthySince: since }).health,
        heldBy: { rollout, wave },
      } as NodeFacts,
    ];
    const waiting = (more: Array<[string, NodeFacts]>): Facts =>
      new Map([
        ...(record.waves[1]?.nodes ?? []).map((n): [string, NodeFacts] => [n.node, checked('unknown')]),
        ...more,
      ]);

    // Unhealthy before its wave ended (judged there), another rollout's, or of a later wave: not counted.
    const notCounted = advance(
      record,
      waiting([
        found('n0000', endedAt),
        found('n0004', later(9).toISOString(), 'r2', 0),
        found('n0005', later(9).toISOString(), 'r1', 2),
      ]),
      later(9),
    );
    const once = advance(record, waiting([found('n0000', later(8).toISOString())]), later(9));
    const again = advance(once.record, waiting([found('n0000', later(8).toISOString())]), later(10));

    expect(notCounted.record).toBe(record);
    expect(once.decision.kind).toBe('wait');
    expect(once.record.turnedUnhealthy).toEqual([
      { node: 'n0000', state: 'failed', step: 'unhealthy: curl: (7) refused' },
    ]);
    expect(again.record).toBe(once.record);
    // A second failure passes --max-failures 1.
    const twice = advance(
      once.record,
      new Map([
        ...(record.waves[1]?.nodes ?? []).map((n): [string, NodeFacts] => [
          n.node,
          n.node === 'n0001' ? checked('unhealthy') : checked('unknown'),
        ]),
      ]),
      later(11),
    );
    expect(twice.decision.kind).toBe('halted');
    expect(twice.record.reason).toContain('2 failures');
    expect(twice.record.reason).toContain('n0000 failed at unhealthy');
    // Resumed, it bears them: the same node found again counts nothing more.
    const going = resumed(twice.record, later(12).toISOString());
    expect(going.borne).toBe(2);
  });

  it(`halts once more than ${maxTurnedUnhealthy} nodes of waves done turned unhealthy, keeping the record bounded`, () => {
    let record = sendWave(
      rollout(maxTurnedUnhealthy + 10, { waves: `${maxTurnedUnhealthy + 2},100%`, maxFailures: '100%' }),
    );
    record = advance(
      record,
      reports(record, () => checked('healthy')),
      later(5),
    ).record;
    record = sendWave(record, later(5));
    const facts: Facts = new Map(
      (record.waves[0]?.nodes ?? []).map((n): [string, NodeFacts] => [
        n.node,
        {
          health: checked('unhealthy', 2, { unhealthySince: later(8).toISOString() }).health,
          heldBy: { rollout: 'r1', wave: 0 },
        } as NodeFacts,
      ]),
    );
    const { decision, record: halted } = advance(record, facts, later(9));
    expect(decision.kind).toBe('halted');
    expect(halted.reason).toMatch(
      new RegExp(`^more than ${maxTurnedUnhealthy} nodes of waves already done turned unhealthy`),
    );
    expect(halted.turnedUnhealthy ?? []).toHaveLength(0);
  });
});
