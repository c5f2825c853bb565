import { awsQuotas } from '../lib/local/aws-quotas.ts';
import { LocalPushFlow } from '../lib/local/local-push-flow.ts';
import { localActor } from '../lib/server/core/audit/record.ts';
import { PushFlowFailedError } from '../lib/server/core/mesh/errors.ts';
import { MeshService } from '../lib/server/core/mesh/service.ts';
import { maxWaveNodes } from '../lib/server/core/push/flow-schemas.ts';
import type { PushRequest } from '../lib/server/core/push/ports.ts';
import { Pusher } from '../lib/server/core/push/pusher.ts';
import { pushTaskFunctions } from '../lib/server/core/push/steps.ts';
import { MemoryMeshStore } from '../test/support/memory-mesh-store.ts';
import type { BenchTable } from './support/table.ts';

/**
 * Today's paths under AWS's quotas as the local runtime enforces them (docs/local-and-aws.md,
 * "AWS's quotas, enforced here"): the push flow run from its ASL on a memory store (the flow's
 * state does not depend on the store), with every state and task measured. A path that fails
 * here fails on AWS: the table says with what, and the first state that passed 256 KiB.
 */

/** A node name of `length` characters (50 to 63: names as long as a fleet's often are). */
const longName = (i: number, length: number) => `n${String(i).padStart(6, '0')}-`.padEnd(length, 'x');

async function behindMesh(count: number, name: (i: number) => string) {
  const store = new MemoryMeshStore();
  const service = new MeshService({ store, removals: store });
  for (let i = 0; i < count; i++) await service.addNode(name(i), {}, localActor());
  return store;
}

type Row = readonly (string | number)[];

async function pushCase(
  label: string,
  count: number,
  name: (i: number) => string,
  request: (names: string[]) => PushRequest,
): Promise<Row> {
  const store = await behindMesh(count, name);
  let largest = { state: '', bytes: 0 };
  const flow = new LocalPushFlow({
    tasks: pushTaskFunctions(new Pusher({ store })),
    retryIntervalMs: 0,
    measured: (state, bytes) => {
      if (bytes > largest.bytes) largest = { state, bytes };
    },
  });
  const started = performance.now();
  let outcome: string;
  try {
    const answer = await flow.push(request(Array.from({ length: count }, (_, i) => name(i))));
    outcome = `passed: ${answer.flushed.length} flushed`;
  } catch (error) {
    if (!(error instanceof PushFlowFailedError)) throw error;
    outcome = `${error.error}: ${error.message}`;
    const over = /'([^']*)'.*\((\d+) bytes, limit/.exec(error.message);
    if (over && Number(over[2]) > largest.bytes) largest = { state: over[1] ?? '', bytes: Number(over[2]) };
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  return [label, count, largest.bytes, largest.state, seconds, outcome];
}

export async function run(): Promise<BenchTable[]> {
  const sizes = (process.env.MESH_BENCH_SIZES ?? '6000,10000,50000').split(',').map(Number);
  const rows: Row[] = [];
  for (const count of sizes) {
    rows.push(
      await pushCase(
        'push --behind, 50-63-character names',
        count,
        (i) => longName(i, 50 + (i % 14)),
        () => ({
          behind: true,
        }),
      ),
    );
  }
  rows.push(
    await pushCase(
      'rollout wave (request.nodes), 50-63-character names',
      maxWaveNodes,
      (i) => longName(i, 50 + (i % 14)),
      (names) => ({ nodes: names, rollout: 'bench' }),
    ),
  );
  return [
    {
      title: `aws-limits: the push flow under Step Functions' ${awsQuotas.stateBytes}-byte state`,
      columns: ['path', 'nodes', 'largest state (bytes)', 'at', 's', 'outcome'],
      rows,
      notes: [
        'largest state: the largest state or task data measured before the run ended; a run stopped by',
        "the quota ends at its first state over the limit, so the mesh's whole list can be larger still.",
        `a rollout wave holds at most ${maxWaveNodes} nodes (maxWaveNodes): its row is at that size.`,
        'MESH_BENCH_SIZES=6000,10000 (say) runs fewer sizes.',
      ],
    },
  ];
}
