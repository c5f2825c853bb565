import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compose, isBehind } from '../../lib/core/mesh/declaration.ts';
import { MeshError } from '../../lib/core/mesh/errors.ts';
import { Pusher } from '../../lib/core/mesh/push.ts';
import { beginPush, findBehind, sendBatch } from '../../lib/core/mesh/push-steps.ts';
import { MeshService } from '../../lib/core/mesh/service.ts';
import type { PushOutcome, PushRequest } from '../../lib/core/ports.ts';
import { MemoryMeshStore } from '../support/memory-mesh-store.ts';

/**
 * Drives the flow's own steps the way push.asl.json sequences them (Begin, then FindBehind and
 * a Map of Send until done), in-process so a hundred sequences run in seconds. The ASL itself
 * is run in mesh-push.test.ts and the integration flow test.
 */
async function push(pusher: Pusher, request: PushRequest): Promise<PushOutcome> {
  let state = await findBehind(pusher, await beginPush(pusher, request));
  while (!state.done) {
    const results = await Promise.all(
      state.batches.map((nodes) => sendBatch(pusher, { nodes, round: state.round })),
    );
    state = await findBehind(pusher, { ...state, results });
  }
  return { pushed: state.pushed, flushed: state.flushed, rounds: state.round, behind: state.behind };
}

const nodes = ['n0', 'n1', 'n2', 'n3'];
const modules = ['m0', 'm1', 'm2', 'm3'];
const node = fc.constantFrom(...nodes);
const module = fc.constantFrom(...modules);

const step = fc.oneof(
  node.map((n) => ({ kind: 'add' as const, node: n })),
  fc.record({
    kind: fc.constant('assign' as const),
    node,
    module,
    provides: fc.option(fc.constantFrom('amqp', 'sql')),
  }),
  fc.record({
    kind: fc.constant('consume' as const),
    node,
    module,
    providerNode: node,
    providerModule: module,
  }),
  fc.record({ kind: fc.constant('upgrade' as const), module, version: fc.constantFrom('1', '2', '3') }),
  fc.record({
    kind: fc.constant('push' as const),
    node: fc.option(node, { nil: undefined }),
    full: fc.boolean(),
    maxRounds: fc.integer({ min: 1, max: 3 }),
  }),
);

describe('the mesh model (property)', () => {
  it('after every push, nothing is behind unless the bound was hit, and then behind names exactly that', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 30 }), async (steps) => {
        // Prepare
        const store = new MemoryMeshStore();
        const service = new MeshService({ store });
        const pusher = new Pusher({ store });
        const revisions = new Map<string, number>();

        for (const s of steps) {
          // Act
          try {
            if (s.kind === 'add') await service.addNode(s.node);
            else if (s.kind === 'assign') await service.assign(s.node, s.module, s.provides);
            else if (s.kind === 'consume') {
              await service.consume(
                { node: s.node, module: s.module },
                { node: s.providerNode, module: s.providerModule },
              );
            } else if (s.kind === 'upgrade') await store.setModuleVersion(s.module, s.version);
          } catch (error) {
            // Refused input is part of the model; anything else is a defect.
            if (!(error instanceof MeshError)) throw error;
            continue;
          }
          if (s.kind !== 'push') continue;
          if (s.node !== undefined && !store.nodes.has(s.node)) continue;
          const request: PushRequest =
            s.node !== undefined
              ? { node: s.node, maxRounds: s.maxRounds }
              : { behind: true, full: s.full, maxRounds: s.maxRounds };
          const outcome = await push(pusher, request);

          // Assess: the audit recomposes every node
          const actuallyBehind: string[] = [];
          for (const name of store.nodes.keys()) {
            const snapshot = await store.readNode(name);
            if (!snapshot) continue;
            const composed = compose(snapshot, { secret: () => 'x', now: () => 't' });
            if (isBehind(snapshot, composed)) actuallyBehind.push(name);
            if (composed.mints.length === 0) {
              // Recomposition is stable.
              expect(compose(snapshot, { secret: () => 'y', now: () => 'u' }).digest).toBe(composed.digest);
            }
            const revision = snapshot.sent?.revision ?? 0;
            expect(revision).toBeGreaterThanOrEqual(revisions.get(name) ?? 0);
            revisions.set(name, revision);
          }
          expect(outcome.behind.slice().sort()).toEqual(actuallyBehind.sort());
          if (outcome.behind.length > 0) expect(outcome.rounds).toBe(s.maxRounds);
        }
      }),
      { numRuns: 120 },
    );
  });
});
