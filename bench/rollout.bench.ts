import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runtimeLines } from '../lib/local/log-lines.ts';
import { freePort } from '../lib/local/tcp-ports.ts';
import type { RolloutAnswer as RolloutRecord } from '../lib/server/core/rollout/pages.ts';
import { watch } from '../test/support/processes.ts';
import { type AgentTimeline, startAgents, until } from '../tools/fleet/agents.ts';
import { enrolledFleet, operatorCall } from '../tools/fleet/enrolled-fleet.ts';
import type { BenchTable } from './support/table.ts';

/**
 * Rollouts in waves (docs/decisions/rollouts-in-waves.md) over 1,000 real agents on the local
 * runtime (`npm start` as its own process), all carrying `app`: a good upgrade in waves 1%,10%,100%
 * and another with no waves, side by side (until every agent applied it); then an upgrade whose
 * apply fails on every node, in the same waves with --max-failures 0 (how many nodes were sent it,
 * how long until it halted). MESH_BENCH_AGENTS scales it (default 1000).
 */
const agents = Number(process.env.MESH_BENCH_AGENTS ?? 1000);
const root = join(import.meta.dirname, '..');
const waves = '1%,10%,100%';

/** The rollout's record once it has claimed its nodes and is no longer running (404 until the consumer has started it). */
async function ended(api: string, id: string): Promise<RolloutRecord> {
  for (;;) {
    const answer = await fetch(`${api}/rollouts/${id}`);
    if (answer.status === 200) {
      const record = (await answer.json()) as RolloutRecord;
      if (record.state !== 'running' && record.state !== 'claiming') return record;
    } else await answer.text();
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export async function run(): Promise<BenchTable[]> {
  const dataDir = await mkdtemp(join(tmpdir(), 'mesh-bench-rollout-'));
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
  try {
    await runtime.waitForCode(runtimeLines.ready, { timeoutMs: 60_000 });
    const nodes = Array.from({ length: agents }, (_, i) => `roll-${String(i).padStart(4, '0')}`);
    const { keys, channels } = await enrolledFleet(api, nodes);

    fleet = startAgents({
      api,
      nodes: keys,
      channelOf: (node) => channels.get(node),
      intervalMs: 30_000,
      failWhen: (_node, declaration) =>
        declaration.includes('"2.0-bad"') ? 'app 2.0-bad does not start' : undefined,
    });
    const timelines = [...fleet.timelines.values()];
    await until('every agent to connect', () => timelines.every((t) => t.connectedAt), 600_000);
    try {
      await until('every agent to catch up', () => timelines.every((t) => t.appliedAt.has(1)), 600_000);
    } catch (error) {
      const behind = timelines.filter((t) => !t.appliedAt.has(1)).map((t) => t.node);
      throw new Error(
        `${(error as Error).message}: ${behind.length} have not (${behind.slice(0, 5).join(', ')}…)`,
      );
    }
    const revisionNow = new Map(timelines.map((t) => [t.node, 1]));
    const latestApplied = (t: AgentTimeline) => Math.max(0, ...t.appliedAt.keys());

    // 1. a good version in waves, then 2. another with no waves, on hosts that all applied the last
    const good = async (version: string, inWaves: boolean) => {
      const before = new Map(timelines.map((t) => [t.node, latestApplied(t)]));
      const at = Date.now();
      const answer = (await operatorCall(api, 'POST', '/upgrades', {
        module: 'app',
        version,
        ...(inWaves ? { waves } : {}),
      })) as { rollout?: string };
      await until(
        `every agent to apply app ${version}`,
        () => timelines.every((t) => latestApplied(t) > (before.get(t.node) ?? 0)),
        900_000,
      );
      const ms = Date.now() - at;
      const record = answer.rollout ? await ended(api, answer.rollout) : undefined;
      for (const t of timelines) revisionNow.set(t.node, latestApplied(t));
      return { ms, record };
    };
    const inWaves = await good('2.1', true);
    const noWaves = await good('2.2', false);

    // 3. a bad version in waves: it halts after the first wave (last, since a host whose apply
    // failed waits out its back-off before it applies again, which would slow the next rollout's first wave)
    const badAt = Date.now();
    const bad = (await operatorCall(api, 'POST', '/upgrades', {
      module: 'app',
      version: '2.0-bad',
      waves,
    })) as {
      rollout: string;
    };
    const halted = await ended(api, bad.rollout);
    const haltMs = Date.now() - badAt;
    const sentBad = halted.waves.slice(0, halted.current + 1).flatMap((w) => w.nodes);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const triedBad = timelines.filter((t) => t.failedAt.size > 0).length;

    const seconds = (ms: number) => (ms / 1000).toFixed(1);
    return [
      {
        title: `rollout: ${agents} real agents on the local runtime, waves ${waves}`,
        columns: ['figure', 'value'],
        rows: [
          [
            `bad upgrade, --max-failures 0: nodes sent 2.0-bad (goal: the first wave's ${Math.ceil(agents / 100)})`,
            String(sentBad.length),
          ],
          ['bad upgrade: agents whose apply of 2.0-bad ran (and failed)', String(triedBad)],
          ['bad upgrade: state, and its reason', `${halted.state}: ${(halted.reason ?? '').slice(0, 60)}…`],
          ['bad upgrade: from mesh upgrade to halted (s)', seconds(haltMs)],
          [`good upgrade in waves ${waves}: all ${agents} applied (s)`, seconds(inWaves.ms)],
          [`good upgrade, no waves: all ${agents} applied (s)`, seconds(noWaves.ms)],
          ['in waves / no waves', (inWaves.ms / noWaves.ms).toFixed(2)],
          ['good upgrade in waves: the rollout ended', inWaves.record?.state ?? 'unknown'],
          ...(inWaves.record?.waves ?? []).map((wave, index, all): [string, string] => {
            const sent = Date.parse(wave.sentAt ?? '');
            const next = all[index + 1]?.sentAt;
            return [
              `  wave ${index + 1} (${wave.nodes.length} nodes): sent → all answered → next sent (s)`,
              `${seconds(Date.parse(wave.endedAt ?? '') - sent)} / ${next ? seconds(Date.parse(next) - sent) : '-'}`,
            ];
          }),
        ],
        notes: [
          'the runtime is `node bin/local.ts` on its own; the agents are the real run loop, HTTPS and MQTT, in the bench process',
          'every upgrade goes through the control queue and its consumer; in waves the consumer starts a rollout that the runtime’s driver steps once a second',
          'a wave goes on when each of its nodes has reported applied for the revision it was sent: the waves cost a driver tick and the slowest host of each wave',
        ],
      },
    ];
  } finally {
    await fleet?.stop();
    runtime.child.kill('SIGTERM');
    await runtime.exited();
    await rm(dataDir, { recursive: true, force: true });
  }
}
