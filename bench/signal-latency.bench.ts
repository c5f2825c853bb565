import type { NodeKeys } from '../lib/clients/host/keys.ts';
import { startLocalRuntime } from '../lib/local/local-runtime.ts';
import { localActor } from '../lib/server/core/audit/record.ts';
import { mapLimit } from '../lib/server/core/map-limit.ts';
import { addEnrolledNode } from '../test/support/enrolled-nodes.ts';
import { startAgents, until } from '../tools/fleet/agents.ts';
import { median, percentile } from './support/stats.ts';
import type { BenchTable } from './support/table.ts';

/**
 * Push → host applied, on the local runtime, with 100 real agents on the signal and 100 polling
 * every 30 s (the default `--interval`), in one run. Each round changes a few nodes of one group
 * (an assignment each), pushes `--behind`, and times every host from the push's start to the
 * moment its apply step runs. Poll rounds start at random moments of the poll cycle, as pushes
 * do. MESH_BENCH_AGENTS (default 100 per group) and MESH_BENCH_ROUNDS (default 10 signal rounds,
 * 4 poll rounds) scale it.
 */
const agentsPerGroup = Number(process.env.MESH_BENCH_AGENTS ?? 100);
const signalRounds = Number(process.env.MESH_BENCH_ROUNDS ?? 10);
const pollRounds = Math.max(1, Math.round(signalRounds * 0.4));
const perRound = Math.max(1, Math.round(agentsPerGroup / 10));
const pollIntervalMs = 30_000;

export async function run(): Promise<BenchTable[]> {
  const runtime = await startLocalRuntime({ port: 0, mqttPort: 0, logLevel: 'ERROR' });
  const { parts } = runtime;
  const group = (name: string) => Array.from({ length: agentsPerGroup }, (_, i) => `${name}-${i}`);
  const groups = { signal: group('sig'), poll: group('poll') };
  const keys = new Map<string, NodeKeys>();
  try {
    await mapLimit([...groups.signal, ...groups.poll], 8, async (node) => {
      keys.set(node, await addEnrolledNode(parts, node));
    });
    // one at a time: assignments of one module race on its record
    for (const node of keys.keys()) await parts.meshService.assign(node, 'base', null, localActor());
    await parts.pushFlow.push({ behind: true });
  } catch (error) {
    await runtime.stop();
    throw error;
  }
  const onSignal = startAgents({
    api: runtime.url,
    nodes: new Map(groups.signal.map((node) => [node, keys.get(node) as NodeKeys])),
    channelOf: parts.signalChannel,
    intervalMs: pollIntervalMs,
  });
  const polling = startAgents({
    api: runtime.url,
    nodes: new Map(groups.poll.map((node) => [node, keys.get(node) as NodeKeys])),
    intervalMs: pollIntervalMs,
  });
  const timelines = new Map([...onSignal.timelines, ...polling.timelines]);
  const latencies = { signal: [] as number[], poll: [] as number[] };
  let change = 0;

  const round = async (which: 'signal' | 'poll') => {
    const chosen = [...groups[which]].sort(() => Math.random() - 0.5).slice(0, perRound);
    change += 1;
    for (const node of chosen) await parts.meshService.assign(node, `m${change}`, null, localActor());
    const started = Date.now();
    const outcome = await parts.pushFlow.push({ behind: true });
    const sent = new Map(outcome.flushed.map((entry) => [entry.node, entry.revision]));
    const applied = (node: string) => timelines.get(node)?.appliedAt.get(sent.get(node) as number);
    await until(
      `${which} hosts to apply round ${change}`,
      () => chosen.every((node) => applied(node)),
      120_000,
    );
    for (const node of chosen) latencies[which].push((applied(node) as number) - started);
  };

  try {
    await until(
      'every signal agent to connect',
      () => groups.signal.every((node) => timelines.get(node)?.connectedAt),
      60_000,
    );
    for (let i = 0; i < signalRounds; i += 1) await round('signal');
    for (let i = 0; i < pollRounds; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, Math.random() * pollIntervalMs));
      await round('poll');
    }
  } finally {
    await Promise.all([onSignal.stop(), polling.stop()]);
    await runtime.stop();
  }

  const row = (label: string, values: number[]) => [
    label,
    values.length,
    (median(values) / 1000).toFixed(2),
    (percentile(values, 99) / 1000).toFixed(2),
    (Math.max(...values) / 1000).toFixed(2),
  ];
  return [
    {
      title: `signal latency: push → host applied, ${agentsPerGroup} agents per group on the local runtime (seconds)`,
      columns: ['delivery', 'samples', 'median', 'p99', 'max'],
      rows: [row('signal (MQTT, fetch on change)', latencies.signal), row('poll every 30 s', latencies.poll)],
      notes: [
        `${signalRounds} signal rounds and ${pollRounds} poll rounds of ${perRound} changed nodes each, pushed with push --behind`,
        'each sample runs from the push request to the host running its apply step; the push itself is in it',
        'goal: median ≤ 2 s on the signal',
      ],
    },
  ];
}
