import { describe, expect, it } from 'vitest';
import {
  largestOutcomeBytes,
  nodesPerPart,
  partBytes,
} from '../../lib/server/adapters/rollout/rollout-chunks.ts';
import { rolloutProblem } from '../../lib/server/api/rollout-problems.ts';
import { jsonBytes } from '../../lib/server/core/answer-pages.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import type { PushOutcome } from '../../lib/server/core/push/ports.ts';
import { isReleasing } from '../../lib/server/core/rollout/claims.ts';
import { RolloutOverlapError } from '../../lib/server/core/rollout/errors.ts';
import { rolloutPage, runsOf } from '../../lib/server/core/rollout/pages.ts';
import type { RolloutFacts } from '../../lib/server/core/rollout/ports.ts';
import { newRollout, sizeOf } from '../../lib/server/core/rollout/record.ts';
import { Rollouts } from '../../lib/server/core/rollout/service.ts';
import { rolloutOptions } from '../../lib/server/core/rollout/waves.ts';
import { MemoryRolloutStore } from '../support/memory-rollout-store.ts';

const names = (count: number, prefix = 'n') =>
  Array.from({ length: count }, (_, i) => `${prefix}${String(i).padStart(5, '0')}`);
const options = (waves: string) => rolloutOptions({ waves });

class SaidFacts implements RolloutFacts {
  applied = false;
  async of(nodes: readonly string[]) {
    return new Map(
      nodes.map((node) => [node, this.applied ? { report: { revision: 1, state: 'applied' as const } } : {}]),
    );
  }
  async revisions() {
    return new Map<string, number>();
  }
}

function rollouts(
  store: MemoryRolloutStore,
  facts: RolloutFacts,
  pairs: ReadonlyMap<string, string[]> = new Map(),
  claimStep = { nodes: 5_000, ms: 10_000 },
) {
  return new Rollouts({
    claimStep,
    store,
    facts,
    wave: async (nodes): Promise<PushOutcome> => {
      const sent = [...new Set([...nodes, ...nodes.flatMap((node) => pairs.get(node) ?? [])])];
      return {
        pushed: null,
        flushed: sent.map((node) => ({ node, revision: 1, round: 1 })),
        rounds: 1,
        behind: [],
      };
    },
    behind: async () => [],
    exists: async () => true,
    now: () => new Date('2026-01-01T00:00:00Z'),
  });
}

describe('a part of a wave', () => {
  it('holds few enough nodes that the largest outcomes stay under its bytes, far below an item', () => {
    expect(largestOutcomeBytes).toBeGreaterThan(1_300);
    expect(nodesPerPart * largestOutcomeBytes).toBeLessThanOrEqual(partBytes);
    expect(partBytes).toBeLessThan(400 * 1024 * 0.8);
    expect(nodesPerPart).toBe(222);
  });
});

describe('Rollouts.step', () => {
  it('reads the wave it sends and the wave in flight, never the others', async () => {
    const store = new MemoryRolloutStore();
    const facts = new SaidFacts();
    const service = rollouts(store, facts);
    const record = await service.start({
      by: localActor(),
      origin: { kind: 'on', selector: 'a' },
      nodes: names(1_000),
      options: options('1%,10%,50%,100%'),
    });
    expect((await service.step(record.id)).decision).toEqual({ kind: 'claimed', total: 1_000 });
    expect(store.reads).toEqual([]);
    await service.step(record.id);
    expect(store.reads).toEqual([`${record.id}/0`]);
    store.reads.length = 0;
    await service.step(record.id);
    expect(store.reads).toEqual([`${record.id}/0`]);
    facts.applied = true;
    store.reads.length = 0;
    await service.step(record.id);
    expect(store.reads).toEqual([`${record.id}/0`, `${record.id}/1`]);
  });

  it('moves a node its sends pair with out of a later wave it reads for that alone, and never joins it twice', async () => {
    const store = new MemoryRolloutStore();
    const facts = new SaidFacts();
    const nodes = names(10);
    // n00000 pairs with n00009, in the last wave; n00001 (wave 2) pairs with it again
    const pairs = new Map([
      ['n00000', ['n00009', 'outside']],
      ['n00001', ['n00009', 'n00000']],
    ]);
    const service = rollouts(store, facts, pairs);
    const record = await service.start({
      by: localActor(),
      origin: { kind: 'on', selector: 'a' },
      nodes,
      options: options('1,2,5,100%'),
    });
    await service.step(record.id);
    await service.step(record.id);
    expect(store.reads).toEqual([`${record.id}/0`, `${record.id}/3`]);
    const after = await store.withNodes((await store.read(record.id)) ?? record, [0, 1, 2, 3]);
    expect(after.waves.map((w) => w.nodes?.map((n) => `${n.node}${n.paired ? '+' : ''}`))).toEqual([
      ['n00000', 'n00009', 'outside+'],
      ['n00001'],
      ['n00002', 'n00003', 'n00004'],
      ['n00005', 'n00006', 'n00007', 'n00008'],
    ]);
    facts.applied = true;
    await service.step(record.id);
    const second = await store.withNodes((await store.read(record.id)) ?? record, [1]);
    expect(second.waves[1]?.nodes?.map((n) => n.node)).toEqual(['n00001']);
    expect(sizeOf(second)).toBe(11);
  });

  it('answers a start at once, claiming; the driver claims a bounded step at a time, then sends wave 1', async () => {
    const store = new MemoryRolloutStore();
    const service = rollouts(store, new SaidFacts(), new Map(), { nodes: 4, ms: 10_000 });
    const record = await service.start({
      by: localActor(),
      origin: { kind: 'on', selector: 'a' },
      nodes: names(10),
      options: options('2,100%'),
    });
    expect(record).toMatchObject({ state: 'claiming', claims: { claimed: 0, total: 10 } });
    expect(store.claims.size).toBe(0);
    const decisions = [];
    for (let i = 0; i < 4; i += 1) decisions.push((await service.step(record.id)).decision);
    expect(decisions).toEqual([
      { kind: 'claiming', claimed: 4, total: 10 },
      { kind: 'claiming', claimed: 8, total: 10 },
      { kind: 'claimed', total: 10 },
      { kind: 'send', wave: 0, nodes: ['n00000', 'n00001'] },
    ]);
    expect(store.claims.size).toBe(10);
  });

  it('refuses, while claiming, a rollout over nodes another holds, naming it and some of them; then lets go of every claim it made', async () => {
    const store = new MemoryRolloutStore();
    const service = rollouts(store, new SaidFacts(), new Map(), { nodes: 5, ms: 10_000 });
    const first = await service.start({
      by: localActor(),
      origin: { kind: 'on', selector: 'a' },
      nodes: names(10, 'm'),
      options: options('100%'),
    });
    await service.step(first.id);
    await service.step(first.id);
    const second = await service.start({
      by: localActor(),
      origin: { kind: 'on', selector: 'x' },
      // five free nodes claimed first, then the first rollout's
      nodes: [...names(5, 'a'), ...names(20, 'm')],
      options: options('100%'),
    });
    expect((await service.step(second.id)).decision).toMatchObject({ kind: 'claiming', claimed: 5 });
    expect([...store.claims.values()].filter((c) => c.rollout === second.id)).toHaveLength(5);
    const { decision, record } = await service.step(second.id);
    expect(decision.kind).toBe('refused');
    expect(record).toMatchObject({
      state: 'refused',
      refusal: {
        code: 'rollout_overlap',
        rollout: first.id,
        nodes: 5,
        state: 'running',
        some: names(5, 'm'),
      },
      releasing: { released: 0, upto: 10 },
    });
    expect(await store.running()).toContain(second.id);
    while (isReleasing(await service.read(second.id))) await service.step(second.id);
    expect([...store.claims.values()].filter((c) => c.rollout === second.id)).toEqual([]);
    expect(await store.running()).not.toContain(second.id);
    expect((await service.read(second.id)).state).toBe('refused');
    expect(rolloutProblem(new RolloutOverlapError(first.id, 5, 'running', ['m00000']))).toMatchObject({
      status: 409,
      code: 'rollout_overlap',
      details: { rollout: first.id, nodes: 5, state: 'running', some: ['m00000'] },
    });
  });

  it('an abort while claiming lets go of what was claimed, a step at a time', async () => {
    const store = new MemoryRolloutStore();
    const service = rollouts(store, new SaidFacts(), new Map(), { nodes: 3, ms: 10_000 });
    const record = await service.start({
      by: localActor(),
      origin: { kind: 'on', selector: 'a' },
      nodes: names(10),
      options: options('100%'),
    });
    await service.step(record.id);
    await service.step(record.id);
    expect(store.claims.size).toBe(6);
    const aborted = await service.abort(record.id, localActor());
    expect(aborted).toMatchObject({ state: 'aborted', releasing: { released: 0, upto: 9 } });
    while (isReleasing(await service.read(record.id))) await service.step(record.id);
    expect(store.claims.size).toBe(0);
  });

  it('a rollout that ran to its end, or was aborted after it ran, lets go of its claims a step at a time', async () => {
    const store = new MemoryRolloutStore();
    const facts = new SaidFacts();
    const service = rollouts(store, facts, new Map(), { nodes: 4, ms: 10_000 });
    const ran = await service.start({
      by: localActor(),
      origin: { kind: 'on', selector: 'a' },
      nodes: names(10, 'r'),
      options: options('100%'),
    });
    const held = await service.start({
      by: localActor(),
      origin: { kind: 'on', selector: 'b' },
      nodes: names(10, 'h'),
      options: options('100%'),
    });
    const claimsOf = (id: string) => [...store.claims.values()].filter((c) => c.rollout === id).length;
    for (let i = 0; i < 3; i += 1) await service.step(held.id);
    facts.applied = true;
    let step = await service.step(ran.id);
    while (step.decision.kind !== 'done') step = await service.step(ran.id);

    expect(step.record).toMatchObject({ state: 'done', releasing: { released: 0, upto: 10 } });
    expect(claimsOf(ran.id)).toBe(10);
    const released = [];
    while (isReleasing(await service.read(ran.id))) released.push((await service.step(ran.id)).decision);
    expect(released).toEqual([
      { kind: 'releasing', released: 4, upto: 10 },
      { kind: 'releasing', released: 8, upto: 10 },
      { kind: 'releasing', released: 10, upto: 10 },
    ]);
    expect(claimsOf(ran.id)).toBe(0);
    expect(await store.running()).not.toContain(ran.id);

    expect(await service.abort(held.id, localActor())).toMatchObject({
      state: 'aborted',
      releasing: { released: 0, upto: 10 },
    });
    expect(claimsOf(held.id)).toBe(10);
    while (isReleasing(await service.read(held.id))) await service.step(held.id);
    expect(claimsOf(held.id)).toBe(0);
  });

  it('an upgrade claiming over a halted upgrade of the same module supersedes it and goes on', async () => {
    const store = new MemoryRolloutStore();
    const service = rollouts(store, new SaidFacts());
    const upgrade = (version: string) => ({ kind: 'upgrade' as const, module: 'web', version });
    const bad = await service.start({
      by: localActor(),
      origin: upgrade('2.0-bad'),
      nodes: names(10),
      options: options('1,100%'),
    });
    await service.step(bad.id);
    await store.write({ ...(await service.read(bad.id)), state: 'halted', reason: 'test' });
    const good = await service.start({
      by: localActor(),
      origin: upgrade('2.1'),
      nodes: names(10),
      options: options('1,100%'),
    });
    expect((await service.step(good.id)).decision).toEqual({ kind: 'superseded', rollout: bad.id });
    expect(await service.read(bad.id)).toMatchObject({
      state: 'aborted',
      reason: `superseded by rollout ${good.id} (upgrade web 2.1)`,
    });
    expect((await service.step(good.id)).decision).toEqual({ kind: 'claimed', total: 10 });
    expect(new Set([...store.claims.values()].map((c) => c.rollout))).toEqual(new Set([good.id]));
  });
});

describe('rolloutPage', () => {
  it('cuts the nodes under the budget with the header and every wave’s counts on each page; the pages hold every node once', () => {
    const record = newRollout({
      id: 'r1',
      origin: { kind: 'behind' },
      nodes: names(5_000),
      rollout: options('1%,10%,100%'),
      now: '2026-01-01T00:00:00Z',
    });
    const budget = 20_000;
    const seen: string[] = [];
    let at: number | null = 0;
    while (at !== null) {
      const { page, next } = rolloutPage(record, runsOf(record, at), at, sizeOf(record), budget);
      expect(jsonBytes(page)).toBeLessThanOrEqual(budget);
      expect(page.waves.map((w) => [w.size, w.counts])).toEqual([
        [50, { pending: 50 }],
        [450, { pending: 450 }],
        [4_500, { pending: 4_500 }],
      ]);
      seen.push(...page.waves.flatMap((w) => w.nodes.map((n) => n.node)));
      at = next;
    }
    expect(seen).toEqual(names(5_000));
  });
});
