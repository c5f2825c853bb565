import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runtimeLines } from '../lib/local/log-lines.ts';
import { freePort } from '../lib/local/tcp-ports.ts';
import { watch } from '../test/support/processes.ts';
import { type AgentTimeline, startAgents, until } from '../tools/fleet/agents.ts';
import { enrolledFleet, operatorCall } from '../tools/fleet/enrolled-fleet.ts';
import { median, percentile } from './support/stats.ts';
import type { BenchTable } from './support/table.ts';

/**
 * 1,000 real agents connected to the local runtime's embedded broker (`npm start` as its own
 * process, so its memory is its own): how long they take to connect when all start at once
 * (each connect runs the authorizer with a replay-guard write, then a presence write and a
 * catch-up fetch, all against one DynamoDB Local), the runtime's
 * memory before and with them, and the fan-out of `mesh upgrade` touching every one of them
 * (control queue → consumer → push flow → one signal per node → each host fetches and
 * applies). MESH_BENCH_AGENTS scales it (default 1000).
 */
const agents = Number(process.env.MESH_BENCH_AGENTS ?? 1000);
const root = join(import.meta.dirname, '..');

const rssMb = (pid: number) => {
  const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) / 1024;
};

export async function run(): Promise<BenchTable[]> {
  const dataDir = await mkdtemp(join(tmpdir(), 'mesh-bench-load-'));
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    MESH_PORT: String(port),
    MESH_MQTT_PORT: '0',
    MESH_DATA: dataDir,
    MESH_LOG_LEVEL: 'ERROR',
    MESH_LOG_FORMAT: 'json',
  };
  delete env.AWS_ENDPOINT_URL;
  delete env.AWS_ENDPOINT_URL_DYNAMODB;
  delete env.AWS_ENDPOINT_URL_SQS;
  const runtime = watch(process.execPath, [join(root, 'bin/local.ts')], { env, cwd: root });
  const api = `http://127.0.0.1:${port}`;
  let fleet: ReturnType<typeof startAgents> | undefined;
  let peakMb = 0;
  const sampler = setInterval(() => {
    if (runtime.child.pid) peakMb = Math.max(peakMb, rssMb(runtime.child.pid));
  }, 200);
  try {
    await runtime.waitForCode(runtimeLines.ready, { timeoutMs: 60_000 });
    const pid = runtime.child.pid as number;
    const nodes = Array.from({ length: agents }, (_, i) => `load-${String(i).padStart(4, '0')}`);
    const { keys, channels } = await enrolledFleet(api, nodes);
    const idleMb = rssMb(pid);

    const started = Date.now();
    fleet = startAgents({
      api,
      nodes: keys,
      channelOf: (node) => channels.get(node),
      intervalMs: 30_000,
    });
    const timelines = [...fleet.timelines.values()];
    await until('every agent to connect', () => timelines.every((t) => t.connectedAt), 300_000);
    const connectMs = timelines.map((t) => (t.connectedAt as number) - started);
    await until('every agent to catch up', () => timelines.every((t) => t.appliedAt.has(1)), 300_000);
    const connectedMb = rssMb(pid);

    const upgradeAt = Date.now();
    await operatorCall(api, 'POST', '/upgrades', { module: 'app', version: '2.0' });
    await until(
      'every agent to apply the upgrade',
      () => timelines.every((t) => t.appliedAt.has(2)),
      600_000,
    );
    const after = (pick: (t: AgentTimeline) => number | undefined) =>
      timelines.map((t) => (pick(t) as number) - upgradeAt);
    const signalled = after((t) => t.signalledAt.get(2));
    const applied = after((t) => t.appliedAt.get(2));
    const upgradedMb = rssMb(pid);

    const seconds = (ms: number) => (ms / 1000).toFixed(2);
    return [
      {
        title: `signal load: ${agents} agents on the local runtime's embedded broker`,
        columns: ['figure', 'value'],
        rows: [
          [
            `connected and subscribed, median (s after all ${agents} started at once)`,
            seconds(median(connectMs)),
          ],
          ['connected and subscribed, p99 (s)', seconds(percentile(connectMs, 99))],
          [`all ${agents} connected (s)`, seconds(Math.max(...connectMs))],
          ['runtime RSS before the agents (MB)', idleMb.toFixed(0)],
          [`runtime RSS with ${agents} connected (MB)`, connectedMb.toFixed(0)],
          ['runtime RSS after the upgrade (MB)', upgradedMb.toFixed(0)],
          ['runtime RSS peak (MB)', peakMb.toFixed(0)],
          ['upgrade: first signal received (s after mesh upgrade)', seconds(Math.min(...signalled))],
          ['upgrade: last signal received (s)', seconds(Math.max(...signalled))],
          ['upgrade: median host applied (s)', seconds(median(applied))],
          [`upgrade: all ${agents} applied (s)`, seconds(Math.max(...applied))],
        ],
        notes: [
          'the runtime is `node bin/local.ts` on its own (its DynamoDB Local is a separate Java process, not counted)',
          'the agents are the real run loop, HTTPS control plane and MQTT link, in the bench process; applying only notes the time',
          'the upgrade goes through the control queue, the consumer and the push flow, sending every node in rounds of 25',
        ],
      },
    ];
  } finally {
    clearInterval(sampler);
    await fleet?.stop();
    runtime.child.kill('SIGTERM');
    await runtime.exited();
    await rm(dataDir, { recursive: true, force: true });
  }
}
