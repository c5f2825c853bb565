import { describe, expect, it } from 'vitest';
import { Batch, type Keyed } from '../../lib/server/adapters/mesh-file/mesh-file-batch.ts';
import { commitPhase } from '../../lib/server/adapters/mesh-file/mesh-file-lanes.ts';

const put = (pk: string, sk = 'node'): Keyed => ({ key: { pk, sk }, op: { op: 'put', item: { pk, sk } } });
const check = (pk: string): Keyed => ({
  key: { pk, sk: 'module' },
  op: { op: 'check', condition: 'attribute_exists(pk)' },
});
const batchOf = (...writes: Keyed[]) => {
  const batch = new Batch();
  batch.add(writes);
  return batch;
};
const shared = (key: string) => key.startsWith('module#');
const tick = () => new Promise((resolve) => setTimeout(resolve, 2));

describe("an apply phase's transactions, several at once", () => {
  it('never runs two that write one item at once, lets shared checks overlap, and commits all', async () => {
    // Two providers' counts: batches 0-2 write provider a, 3-5 provider b; all check one module.
    const batches = [0, 1, 2, 3, 4, 5].map((i) =>
      batchOf(put(`node#web-${i}`), put(i < 3 ? 'node#a' : 'node#b', 'count'), check('module#nginx')),
    );
    const inFlight = new Set<string>();
    let most = 0;
    const clashes: string[] = [];
    const committed: number[] = [];
    const done = await commitPhase(
      batches,
      async (batch) => {
        const keys = batch.keys().filter((key) => !shared(key));
        for (const key of keys) if (inFlight.has(key)) clashes.push(key);
        for (const key of keys) inFlight.add(key);
        most = Math.max(most, inFlight.size);
        await tick();
        for (const key of keys) inFlight.delete(key);
        committed.push(batches.indexOf(batch));
      },
      { lanes: 4, until: Infinity, shared, pace: { longest: 0 }, committed: () => committed.length },
    );
    expect(done).toBe(true);
    expect(clashes).toEqual([]);
    expect(committed.sort()).toEqual([0, 1, 2, 3, 4, 5]);
    expect(most).toBe(4); // two at once: one on each provider
  });

  it('stops at the first failure, finishing those in flight, and stops when time is up', async () => {
    const batches = [0, 1, 2, 3, 4, 5].map((i) => batchOf(put(`node#web-${i}`)));
    let started = 0;
    const failing = commitPhase(
      batches,
      async () => {
        started += 1;
        const first = started === 1;
        await tick();
        if (first) throw new Error('a condition failed');
      },
      { lanes: 2, until: Infinity, shared, pace: { longest: 0 }, committed: () => 0 },
    );
    await expect(failing).rejects.toThrow('a condition failed');
    expect(started).toBe(2);
    let committed = 0;
    const late = await commitPhase(
      batches,
      async () => {
        committed += 1;
      },
      { lanes: 2, until: 0, shared, pace: { longest: 0 }, committed: () => committed },
    );
    expect(late).toBe(false);
    expect(committed).toBe(1);
  });
});
