import { describe, expect, it } from 'vitest';
import { largestOutcomeBytes, nodesPerPart, partBytes } from '../../lib/adapters/dynamodb/rollout-chunks.ts';
import { rolloutProblem } from '../../lib/api/problems/rollout.ts';
import { localActor } from '../../lib/core/audit/record.ts';
import type { PushOutcome } from '../../lib/core/ports.ts';
import { RolloutOverlapError } from '../../lib/core/rollout/errors.ts';
import { rolloutPage, runsOf } from '../../lib/core/rollout/pages.ts';
import type { RolloutFacts } from '../../lib/core/rollout/ports.ts';
import { newRollout, sizeOf } from '../../lib/core/rollout/record.ts';
import { Rollouts } from '../../lib/core/rollout/service.ts';
import { rolloutOptions } from '../../lib/core/rollout/waves.ts';
import { jsonBytes } from '../../lib/core/view-pages.ts';
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
) {
  return new Rollouts({
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

  it('refuses a rollout over nodes another holds, naming it and how many, and changes nothing', async () => {
    const store = new MemoryRolloutStore();
    const service = rollouts(store, new SaidFacts());
    const first = await service.start({
      by: localActor(),
      origin: { kind: 'on', selector: 'a' },
      nodes: names(10),
      options: options('100%'),
    });
    const refused = await service
      .start({
        by: localActor(),
        origin: { kind: 'on', selector: 'x' },
        nodes: names(20),
        options: options('100%'),
      })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(RolloutOverlapError);
    expect(refused).toMatchObject({ holder: first.id, nodes: 10, state: 'running' });
    expect(rolloutProblem(refused)).toMatchObject({
      status: 409,
      code: 'rollout_overlap',
      details: { rollout: first.id, nodes: 10, state: 'running' },
    });
    expect(store.headers.size).toBe(1);
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
