import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { isDriven } from '../../lib/server/core/rollout/claims.ts';
import { RolloutStateError } from '../../lib/server/core/rollout/errors.ts';
import { Rollouts } from '../../lib/server/core/rollout/service.ts';
import { rolloutOptions } from '../../lib/server/core/rollout/waves.ts';
import { MemoryRolloutStore } from '../support/memory-rollout-store.ts';

/**
 * Claims as a job (docs/decisions/rollouts-in-waves.md): random rollouts over random, overlapping
 * nodes, started at once and stepped in a random order with random step sizes, some aborted on
 * the way. Once the driver has nothing left to do: every rollout ended running or refused (or
 * aborted), the running ones hold each of their nodes and no two share one, and no claim is left
 * to a rollout that was refused or aborted.
 */
const pool = Array.from({ length: 24 }, (_, i) => `n${String(i).padStart(2, '0')}`);

const scenario = fc.record({
  rollouts: fc.array(fc.subarray(pool, { minLength: 1 }), { minLength: 2, maxLength: 4 }),
  stepNodes: fc.integer({ min: 1, max: 10 }),
  order: fc.array(fc.nat(), { minLength: 1, maxLength: 60 }),
  aborts: fc.array(fc.nat(), { maxLength: 2 }),
});

describe('rollouts claiming at once', () => {
  it('end with the running ones holding all their nodes, none shared, and nothing left claimed by the others', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async ({ rollouts: picked, stepNodes, order, aborts }) => {
        const store = new MemoryRolloutStore();
        const service = new Rollouts({
          store,
          facts: { of: async () => new Map(), revisions: async () => new Map() },
          wave: async () => ({ pushed: null, flushed: [], rounds: 0, behind: [] }),
          behind: async () => [],
          exists: async () => true,
          now: () => new Date('2026-01-01T00:00:00Z'),
          claimStep: { nodes: stepNodes, ms: 10_000 },
        });
        const ids: string[] = [];
        for (const [index, nodes] of picked.entries()) {
          const started = await service.start({
            id: `20260101T000000000Z-00000${index}`,
            by: localActor(),
            origin: { kind: 'on', selector: `s${index}` },
            nodes,
            options: rolloutOptions({ waves: '100%' }),
          });
          ids.push(started.id);
        }
        const claiming = async (id: string) => (await service.read(id)).state === 'claiming';
        // a random schedule of claiming steps, an abort now and then
        for (const [at, pick] of order.entries()) {
          const id = ids[pick % ids.length] ?? '';
          if (aborts.includes(at)) await service.abort(id).catch(expectState);
          else if (await claiming(id)) await service.step(id);
        }
        // then the driver until it has nothing left but waves
        for (let rounds = 0; rounds < 1_000; rounds += 1) {
          const pending = [];
          for (const id of ids) {
            const record = await service.read(id);
            if (record.state === 'claiming' || (isDriven(record) && record.state !== 'running'))
              pending.push(id);
          }
          if (pending.length === 0) break;
          for (const id of pending) await service.step(id);
        }

        const records = await Promise.all(ids.map((id) => service.read(id)));
        const owner = new Map<string, string>();
        for (const [index, record] of records.entries()) {
          expect(['running', 'refused', 'aborted']).toContain(record.state);
          if (record.state === 'refused') expect(ids).toContain(record.refusal?.rollout);
          if (record.state !== 'running') continue;
          for (const node of new Set(picked[index])) {
            expect(owner.get(node)).toBeUndefined();
            owner.set(node, record.id);
            expect(store.claims.get(node)?.rollout).toBe(record.id);
          }
        }
        for (const [node, claim] of store.claims) expect(owner.get(node)).toBe(claim.rollout);
      }),
      { numRuns: 200 },
    );
  });
});

function expectState(error: unknown) {
  // an abort of one already refused or aborted is refused, changing nothing
  expect(error).toBeInstanceOf(RolloutStateError);
}
