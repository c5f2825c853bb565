import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { PushOutcome, PushRequest } from '../../lib/server/core/push/ports.ts';
import { Pusher } from '../../lib/server/core/push/pusher.ts';
import { pushTaskFunctions } from '../../lib/server/core/push/steps.ts';
import { runPushDefinition } from '../../lib/server/flows/push-definition.ts';
import { MemoryMeshStore } from '../support/memory-mesh-store.ts';
import {
  emptyCoverage,
  expectCoverage,
  type ModelWorld,
  memoryModelWorld,
  operations,
  runSequence,
} from '../support/mesh-model.ts';
import { unsealedMint } from '../support/sealing.ts';

/**
 * Runs push.asl.json's own steps in the order it gives them (Begin, then FindBehind and a Map
 * of Send until done), in-process so hundreds of sequences run in seconds. The ASL itself
 * runs the same model on DynamoDB Local (test/integration/mesh-model.test.ts).
 */
async function push(pusher: Pusher, request: PushRequest): Promise<PushOutcome> {
  const { pushed, flushed, rounds, behind } = await runPushDefinition(pushTaskFunctions(pusher), request);
  return { pushed, flushed, rounds, behind };
}

function memoryWorld(): ModelWorld {
  const store = new MemoryMeshStore();
  const pusher = new Pusher({ store, mint: unsealedMint });
  return memoryModelWorld(store, (request) => push(pusher, request));
}

describe('the mesh model (property)', () => {
  it('after every push, named or not, behind is exactly what a from-scratch compose finds', async () => {
    const coverage = emptyCoverage();
    await fc.assert(
      fc.asyncProperty(operations, async (steps) => {
        await runSequence(memoryWorld(), steps, coverage, '');
      }),
      { numRuns: 400 },
    );
    console.info('mesh model coverage', coverage);
    expectCoverage(coverage);
    expect(coverage.pushes).toBeGreaterThan(400);
  }, 60_000);
});
