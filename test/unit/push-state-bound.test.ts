import { describe, expect, it } from 'vitest';
import type { PushOutcome, PushRequest } from '../../lib/server/core/push/ports.ts';
import { Pusher } from '../../lib/server/core/push/pusher.ts';
import { pushTaskFunctions } from '../../lib/server/core/push/steps.ts';
import { MemoryPushWork } from '../../lib/server/core/push/work.ts';
import { runPushDefinition } from '../../lib/server/flows/push-definition.ts';
import { MemoryMeshStore } from '../support/memory-mesh-store.ts';
import { unsealedMint } from '../support/sealing.ts';

/**
 * The push flow's state, its execution input and every Task's input and output stay under a
 * bound that does not grow with the mesh (docs/decisions/push-state-in-the-store.md): Step
 * Functions refuses any of them over 256 KiB (States.DataLimitExceeded). Measured on the flow's
 * own ASL run in-process, with 63-character names, the longest a node may have.
 */
const kib = 1024;
/** A page of 1,000 63-character names is about 66 KB; everything else the state carries is small. */
const stateBound = 80 * kib;
const awsLimit = 256 * kib;

const longName = (i: number) => `node-${String(i).padStart(6, '0')}-`.padEnd(63, 'x');

async function behindMesh(count: number) {
  const store = new MemoryMeshStore();
  for (let i = 0; i < count; i += 1) await store.addNode(longName(i));
  return store;
}

/** Runs a push on the flow's ASL, answering its outcome and the largest JSON any state or Task passed. */
async function measured(
  store: MemoryMeshStore,
  request: PushRequest,
  options: { executionBudgetMs?: number } = {},
) {
  const work = new MemoryPushWork();
  const tasks = pushTaskFunctions(new Pusher({ store, mint: unsealedMint }), { work, ...options });
  let largest = 0;
  let executions = 0;
  const size = (value: unknown) => new TextEncoder().encode(JSON.stringify(value)).length;
  const measure =
    <T>(task: (input: unknown) => Promise<T>, starts = false) =>
    async (input: unknown): Promise<T> => {
      if (starts) executions += 1;
      const output = await task(input);
      largest = Math.max(largest, size(input), size(output));
      return output;
    };
  const outcome: PushOutcome = await runPushDefinition(
    {
      Begin: measure(tasks.Begin, true),
      FindBehind: measure(tasks.FindBehind),
      Send: measure(tasks.Send),
      work,
    },
    request,
  );
  return { outcome, largest, executions, largestPart: work.largestPart() };
}

describe('the push flow’s state, bounded whatever the size of the mesh', () => {
  it('stays under one fixed bound for 1,000 and 5,000 behind nodes with 63-character names', async () => {
    const small = await measured(await behindMesh(1_000), { behind: true });
    const large = await measured(await behindMesh(5_000), { behind: true });

    expect(small.outcome.flushed).toHaveLength(1_000);
    expect(large.outcome.flushed).toHaveLength(5_000);
    expect(large.outcome.flushed.map((send) => send.node)).toEqual(
      Array.from({ length: 5_000 }, (_, i) => longName(i)),
    );
    expect(large.outcome.behind).toEqual([]);
    // the same bound at five times the nodes: the state carries one page, never the round
    expect(small.largest).toBeLessThan(stateBound);
    expect(large.largest).toBeLessThan(stateBound);
    expect(Math.abs(large.largest - small.largest)).toBeLessThan(kib);
    // what the old flow carried: every flushed node in the state, about 90 bytes each
    expect(5_000 * 90).toBeGreaterThan(awsLimit);
  });

  it('starts a rollout’s wave of 5,000 long names with an input of a few hundred bytes', async () => {
    const store = await behindMesh(5_000);
    const nodes = Array.from({ length: 5_000 }, (_, i) => longName(i));

    const wave = await measured(store, { nodes, rollout: 'r-1', pushId: '20261206T000000000Z-abcdef' });

    expect(wave.outcome.flushed).toHaveLength(5_000);
    expect(wave.largest).toBeLessThan(stateBound);
    // the wave's names are one part of the work (about 330 KB), which the store splits into items
    expect(wave.largestPart).toBeGreaterThan(awsLimit);
  });

  it('pauses an execution past its time between pages, and the next goes on to the same outcome', async () => {
    const whole = await measured(await behindMesh(2_500), { behind: true });
    const paused = await measured(await behindMesh(2_500), { behind: true }, { executionBudgetMs: 0 });

    expect(whole.executions).toBe(1);
    // three pages: each execution sends one, then pauses before the next
    expect(paused.executions).toBe(3);
    expect(paused.outcome).toEqual(whole.outcome);
    expect(paused.largest).toBeLessThan(stateBound);
  });
});
