import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type RunningLocalRuntime, startLocalRuntime } from '../lib/local/local-runtime.ts';
import { localActor } from '../lib/server/core/audit/record.ts';
import { addEnrolledNode } from '../test/support/enrolled-nodes.ts';
import {
  enrolPackaged,
  meshCli,
  packagedHere,
  saidApplied,
  shippedFlags,
  spawnWatched,
  untilSeen,
  type WatchedProcess,
} from './support/packaged-agents.ts';
import { readRunTimeMs } from './support/process-footprint.ts';
import { median, percentile } from './support/stats.ts';
import type { BenchTable } from './support/table.ts';

const rounds = Number(process.env.MESH_BENCH_ROUNDS ?? 15);
/**
 * Each agent's node is as large as the mesh's limits let a node's provisions be (lib/server/core/mesh/limits.ts):
 * 50 consumer modules, each consuming 4 of its own provider node's 20 modules, so 200 provisions,
 * each with its user, resource and its secret sealed to the agent's key, which the agent opens
 * on every change. The provider nodes have no agent; they are enrolled in the store, so their
 * relations are minted. One more packaged agent's provider is not enrolled: its 200 relations
 * wait, so it has nothing to open, and its row beside the packaged one is what opening costs.
 */
const consumerModules = 50;
const consumesEach = 4;
const providerModules = 20;
const provisionsPerNode = consumerModules * consumesEach;

type Variant = {
  readonly name: string;
  readonly packaged: boolean;
  readonly flags: readonly string[];
  /** Its provider enrolled, so its 200 provisions are minted and sealed to it; else they wait. */
  readonly sealed: boolean;
};

const jit = 'same bundle on Node, no flags (JIT compilers on)';
const variants: readonly Variant[] = [
  { name: 'packaged mesh-host (interpreter only, as shipped)', packaged: true, flags: [], sealed: true },
  { name: 'same bundle on Node, shipped flags', packaged: false, flags: shippedFlags, sealed: true },
  { name: jit, packaged: false, flags: [], sealed: true },
  {
    name: 'packaged mesh-host, the 200 relations waiting for their provider (nothing to open)',
    packaged: true,
    flags: [],
    sealed: false,
  },
];

/** The node's delivery once its enrolment's follow-up has minted its relations (or, unsealed, listed them waiting). */
async function minted(parts: RunningLocalRuntime['parts'], node: string, sealed: boolean): Promise<number> {
  for (const deadline = Date.now() + 120_000; Date.now() < deadline; ) {
    const delivery = await parts.deliveries.readDelivery(node);
    const declaration = delivery?.declaration as
      | { provisions: readonly unknown[]; waiting: readonly unknown[] }
      | undefined;
    const done = sealed ? declaration?.provisions.length : declaration?.waiting.length;
    if (delivery && done === provisionsPerNode) return delivery.revision;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(
    `${node} was not sent its ${provisionsPerNode} relations ${sealed ? 'minted' : 'waiting'} within 120 s`,
  );
}

type Samples = { startMs: number; startCpuMs: number; applyMs: number[]; applyCpuMs: number[] };

/**
 * What running on V8's interpreter alone (the packaged agent's flags, chosen for memory) costs
 * when an agent does work: each variant runs as the agent of its own node, whose declaration
 * carries 200 provisions, on the local control plane.
 * Measured: start-up to the first applied push, then `rounds` pushes, each one assignment more,
 * timed from the push to the agent's "applied revision" line, with the agent's own CPU time for
 * it. The variants take turns within each round, so the machine's noise falls on all of them.
 */
export async function run(): Promise<BenchTable[]> {
  const here = await packagedHere();
  const work = mkdtempSync(join(tmpdir(), 'mesh-bench-burst-'));
  process.env.MESH_LOG_LEVEL = 'ERROR';
  const agents: WatchedProcess[] = [];
  let runtime: RunningLocalRuntime | undefined;
  try {
    runtime = await startLocalRuntime({ port: 0, mqttPort: 0, logLevel: 'ERROR' });
    const { parts, url: api } = runtime;
    const mesh = meshCli(here.meshPath, api);
    process.stdout.write(`  building ${variants.length} nodes of ${provisionsPerNode} provisions each\n`);
    const nodes = variants.map((_, index) => `burst-${index}`);
    for (const [index, node] of nodes.entries()) {
      const provider = `${node}-provider`;
      if (variants[index]?.sealed) await addEnrolledNode(parts, provider);
      else await parts.meshService.addNode(provider, {}, localActor());
      for (let index = 0; index < providerModules; index += 1)
        await parts.meshService.assign(provider, `${provider}-db${index}`, 'postgres', localActor());
      await parts.meshService.addNode(node, {}, localActor());
      for (let index = 0; index < consumerModules; index += 1) {
        await parts.meshService.assign(node, `${node}-app${index}`, null, localActor());
        for (let each = 0; each < consumesEach; each += 1)
          await parts.meshService.consume(
            { node, module: `${node}-app${index}` },
            { node: provider, module: `${provider}-db${(index * consumesEach + each) % providerModules}` },
            localActor(),
          );
      }
    }
    await parts.pushFlow.push({ behind: true });

    const samples: Samples[] = [];
    const declarationBytes: number[] = [];
    for (const [index, variant] of variants.entries()) {
      const node = nodes[index] as string;
      const dir = join(work, node);
      // The enrolment's follow-up mints the node's relations to its key and pushes it.
      await enrolPackaged(mesh, here.hostPath, api, node, dir);
      await minted(parts, node, variant.sealed);
      const { stdout } = (await mesh('declaration', node)) as { stdout: string };
      declarationBytes.push(Buffer.byteLength(stdout));
      const runArgs = ['run', '--dir', dir, '--apply', '/bin/true'];
      const started = performance.now();
      const agent = variant.packaged
        ? spawnWatched(here.hostPath, runArgs)
        : spawnWatched(here.nodePath, [...variant.flags, here.bundlePath, ...runArgs]);
      agents.push(agent);
      await untilSeen(() => saidApplied(agent), `${variant.name} to start`, agent.output, {
        everyMs: 5,
      });
      samples.push({
        startMs: performance.now() - started,
        startCpuMs: readRunTimeMs(agent.child.pid as number),
        applyMs: [],
        applyCpuMs: [],
      });
    }
    // Let start-up garbage and the broker sessions settle.
    await new Promise((resolve) => setTimeout(resolve, 3_000));

    for (let round = 0; round < rounds; round += 1) {
      process.stdout.write(`  round ${round + 1}/${rounds}\n`);
      for (const [index, variant] of variants.entries()) {
        const node = nodes[index] as string;
        const agent = agents[index] as WatchedProcess;
        const pid = agent.child.pid as number;
        await parts.meshService.assign(node, `${node}-extra${round}`, null, localActor());
        const cpuBefore = readRunTimeMs(pid);
        const started = performance.now();
        const outcome = await parts.pushFlow.push({ node });
        const revision = outcome.pushed?.revision;
        await untilSeen(
          () => saidApplied(agent, revision),
          `${variant.name} to apply revision ${revision}`,
          agent.output,
          { everyMs: 2 },
        );
        const sample = samples[index] as Samples;
        sample.applyMs.push(performance.now() - started);
        // The report after the apply is part of the agent's work on a change.
        await new Promise((resolve) => setTimeout(resolve, 150));
        sample.applyCpuMs.push(readRunTimeMs(pid) - cpuBefore);
      }
    }

    const baseline = samples[variants.findIndex((variant) => variant.name === jit)] as Samples;
    const rows = variants.map((variant, index) => {
      const sample = samples[index] as Samples;
      return [
        variant.name,
        sample.startMs,
        sample.startCpuMs,
        median(sample.applyMs),
        percentile(sample.applyMs, 90),
        median(sample.applyCpuMs),
        `${(median(sample.applyCpuMs) / median(baseline.applyCpuMs)).toFixed(2)}×`,
      ];
    });
    return [
      {
        title: `agent-burst: an agent's work on a change, ${rounds} pushes of a ${((declarationBytes[0] ?? 0) / 1024).toFixed(0)} KB declaration (${provisionsPerNode} sealed provisions; Node ${here.nodeVersion}; ms)`,
        columns: [
          'agent',
          'start → first applied',
          'CPU at start',
          'push → applied, median',
          'p90',
          'agent CPU per change, median',
          'CPU vs JIT',
        ],
        rows,
        notes: [
          `shipped flags: ${shippedFlags.join(' ')}`,
          'push → applied runs from the push request (send, signal) to the agent printing its "applied revision" line: fetch, verify, write, apply hook /bin/true',
          'agent CPU per change: the time the agent process ran on a CPU (/proc/PID/schedstat, all its threads) from before the push until 150 ms after the apply, its report included',
          `each change opens the ${provisionsPerNode} sealed secrets (HPKE, X25519) before the hook; the last row's declaration lists its ${provisionsPerNode} relations as waiting (${((declarationBytes.at(-1) ?? 0) / 1024).toFixed(0)} KB) and opens nothing: the packaged rows' difference is what opening costs`,
        ],
      },
    ];
  } finally {
    for (const agent of agents) agent.child.kill('SIGTERM');
    await runtime?.stop();
    rmSync(work, { recursive: true, force: true });
  }
}
