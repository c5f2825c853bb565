import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { PushOutcome, PushRequest } from '../../lib/server/core/push/ports.ts';
import { Pusher } from '../../lib/server/core/push/pusher.ts';
import { pushTaskFunctions } from '../../lib/server/core/push/steps.ts';
import { advance } from '../../lib/server/core/rollout/advance.ts';
import { newRollout, type RolloutRecord, waveSent } from '../../lib/server/core/rollout/record.ts';
import { runPushDefinition } from '../../lib/server/flows/push-definition.ts';
import { MemoryMeshStore, splitRelations } from '../support/memory-mesh-store.ts';
import {
  emptyCoverage,
  type ModelWorld,
  memoryModelWorld,
  operations,
  runSequence,
  type Step,
} from '../support/mesh-model.ts';
import { unsealedMint } from '../support/sealing.ts';

/**
 * Waves never split a relation (docs/decisions/rollouts-in-waves.md): random meshes, brought
 * consistent by one push, then changed without a push (consumes, rotations, upgrades, removals),
 * then rolled out over a random set of nodes in random waves. After every wave, no consumer's
 * last-sent declaration holds a provision whose provider's last-sent declaration lacks its grant.
 */
async function run(pusher: Pusher, request: PushRequest): Promise<PushOutcome> {
  const { pushed, flushed, rounds, behind } = await runPushDefinition(pushTaskFunctions(pusher), request);
  return { pushed, flushed, rounds, behind };
}

function world(store: MemoryMeshStore, pusher: Pusher): ModelWorld {
  return memoryModelWorld(store, (request) => run(pusher, request));
}

const consistent: Step = { kind: 'push', node: undefined, full: true, maxRounds: 50 };
const unpushed = operations.map((steps) => steps.filter((step) => step.kind !== 'push'));

describe('waves never split a relation (property)', () => {
  it('after every wave, every provision a consumer was sent has its grant on its provider', async () => {
    let waves = 0;
    let pairedIn = 0;
    await fc.assert(
      fc.asyncProperty(
        operations,
        unpushed,
        fc.array(fc.nat(), { minLength: 1, maxLength: 8 }),
        fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 4 }),
        async (built, changes, order, sizes) => {
          const store = new MemoryMeshStore();
          const lastSent = {
            readDelivery: async (node: string) => {
              const canonical = store.deliveries.get(node);
              return canonical === undefined
                ? undefined
                : { node, revision: 0, digest: '', etag: '', sentAt: '', declaration: JSON.parse(canonical) };
            },
          };
          const pusher = new Pusher({ store, lastSent, mint: unsealedMint });
          await runSequence(world(store, pusher), [...built, consistent, ...changes], emptyCoverage(), '');
          const before = splitRelations(store);
          const nodes = [...store.nodes.keys()];
          if (nodes.length === 0) return;
          const chosen = [...new Set(order.map((at) => nodes[at % nodes.length] as string))];
          const upTo = sizes.map((_, index) =>
            sizes.slice(0, index + 1).reduce((sum, size) => sum + size, 0),
          );
          let record: RolloutRecord = newRollout({
            id: 'model',
            origin: { kind: 'behind' },
            nodes: chosen,
            rollout: {
              waves: upTo.map((count) => ({ count })),
              maxFailures: { count: 0 },
              waveTimeoutSeconds: 60,
              pause: false,
            },
            now: new Date(0).toISOString(),
          });
          for (;;) {
            const { record: next, decision } = advance(record, new Map(), new Date(0));
            if (decision.kind !== 'send') break;
            const outcome = await run(pusher, { nodes: [...decision.nodes] });
            const sends = outcome.flushed.map((f) => ({ node: f.node, revision: f.revision }));
            waves += 1;
            if (sends.some((s) => !decision.nodes.includes(s.node))) pairedIn += 1;
            const split = splitRelations(store).filter((relation) => !before.includes(relation));
            expect({ wave: decision.nodes, split }).toEqual({ wave: decision.nodes, split: [] });
            // every node the wave sent or checked has answered: the next wave goes
            record = waveSent(
              next,
              decision.wave,
              [...decision.nodes.map((node) => ({ node, revision: 0 })), ...sends],
              '',
            );
            record = {
              ...record,
              waves: record.waves.map((w) => ({
                ...w,
                nodes: (w.nodes ?? []).map((n) => ({
                  ...n,
                  state: n.state === 'pending' ? n.state : 'applied',
                })),
              })),
            };
            record = {
              ...record,
              waves: record.waves.map((w, i) => (i === record.current ? { ...w, endedAt: '' } : w)),
            };
          }
        },
      ),
      { numRuns: 300 },
    );
    console.info('rollout model', { waves, pairedIn });
    expect(pairedIn).toBeGreaterThan(0);
  }, 60_000);
});
