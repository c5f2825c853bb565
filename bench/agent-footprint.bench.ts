import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { embeddedBrokerService } from '../lib/local/broker-service.ts';
import { type RunningLocalRuntime, startLocalRuntime } from '../lib/local/local-runtime.ts';
import { localServices } from '../lib/local/services.ts';
import { freePort } from '../lib/local/tcp-ports.ts';
import {
  enrolPackaged,
  meshCli,
  packagedHere,
  saidApplied,
  shippedFlags,
  spawnWatched,
  untilSeen,
} from './support/packaged-agents.ts';
import { copyUncached, type Footprint, watchFootprints } from './support/process-footprint.ts';
import type { BenchTable } from './support/table.ts';

const idleSeconds = Number(process.env.MESH_BENCH_IDLE_SECONDS ?? 60);
const goalMb = 60;

/**
 * How an idle agent learns of a change: on its node's signal (one MQTT connection to the embedded
 * broker, fetching when told and every safety interval), or with the broker away, asking every
 * 30 s and trying the broker again now and then. Each mode runs on its own local control plane,
 * the second started without its broker; the baselines do not depend on it and run in the first.
 */
const idleModes = [
  { mode: 'on the signal', services: localServices, baselines: true },
  {
    mode: 'broker away: polls every 30 s',
    services: localServices.filter((service) => service !== embeddedBrokerService),
    baselines: false,
  },
] as const;

type Variant = {
  readonly name: string;
  /** Runs the packaged executable, else the pinned Node with these arguments. */
  readonly packaged: boolean;
  readonly args: (context: { bundle: string; run: string[]; api: string }) => string[];
  /** An agent, enrolled and pushed once; else a baseline that only shows what Node itself costs. */
  readonly agent: boolean;
};

const every30s = (request: string) => `setInterval(() => ${request}, 30_000); ${request};`;
const variants: readonly Variant[] = [
  { name: 'packaged mesh-host (as shipped)', packaged: true, args: ({ run }) => run, agent: true },
  {
    name: 'same bundle on Node, shipped flags',
    packaged: false,
    args: ({ bundle, run }) => [...shippedFlags, bundle, ...run],
    agent: true,
  },
  {
    name: 'same bundle on Node, no flags',
    packaged: false,
    args: ({ bundle, run }) => [bundle, ...run],
    agent: true,
  },
  {
    name: 'baseline: Node, shipped flags, fetch every 30 s',
    packaged: false,
    args: ({ api }) => [...shippedFlags, '-e', every30s(`fetch('${api}/health').then((r) => r.text())`)],
    agent: false,
  },
  {
    name: 'baseline: Node, shipped flags, node:http every 30 s',
    packaged: false,
    args: ({ api }) => [
      ...shippedFlags,
      '-e',
      every30s(`require('node:http').get('${api}/health', (r) => r.resume())`),
    ],
    agent: false,
  },
  {
    name: 'baseline: Node doing nothing',
    packaged: false,
    args: () => ['-e', 'setInterval(() => {}, 60_000)'],
    agent: false,
  },
];

/**
 * The idle agent's footprint: each agent variant enrolled as its own node against the local
 * control plane (in this process), pushed once, then left alone and sampled each second for a
 * minute: resident memory, split into private and file-backed, and the CPU it used. Baselines
 * beside them show what Node costs on its own, and with each way of asking over HTTP. Every
 * process runs from its own copy of its binary, kept out of the page cache, as after a boot.
 * Then the size of every executable.
 */
export async function run(): Promise<BenchTable[]> {
  const here = await packagedHere();

  const work = mkdtempSync(join(tmpdir(), 'mesh-bench-footprint-'));
  process.env.MESH_LOG_LEVEL = 'ERROR';
  const children: ChildProcess[] = [];
  let runtime: RunningLocalRuntime | undefined;
  try {
    const rows: Array<Array<string | number>> = [];
    for (const [modeIndex, { mode, services, baselines }] of idleModes.entries()) {
      runtime = await startLocalRuntime({ port: await freePort(), mqttPort: 0, services: [...services] });
      const api = runtime.url;
      const mesh = meshCli(here.meshPath, api);
      // One after the other: the control plane answers "try again" to concurrent model writes.
      const measured = variants.filter((variant) => variant.agent || baselines);
      const started: ChildProcess[] = [];
      for (const [index, variant] of measured.entries()) {
        const name = `${modeIndex}-${index}`;
        const binary = join(work, `${name}-${variant.packaged ? 'mesh-host' : 'node'}`);
        copyUncached(variant.packaged ? here.hostPath : here.nodePath, binary);
        const dir = join(work, `host-${name}`);
        // Pushed before it starts, so its first question brings the declaration to apply.
        if (variant.agent) {
          const node = `footprint-${name}`;
          await mesh('node', 'add', node);
          await mesh('assign', node, 'web');
          await enrolPackaged(mesh, here.hostPath, api, node, dir);
          await mesh('push', node);
        }
        const runArgs = ['run', '--dir', dir, '--apply', '/bin/true', '--interval', '30'];
        const agent = spawnWatched(binary, variant.args({ bundle: here.bundlePath, run: runArgs, api }));
        children.push(agent.child);
        started.push(agent.child);
        if (variant.agent) {
          await untilSeen(() => saidApplied(agent), `${variant.name} to apply its push`, agent.output);
        }
      }
      // Let start-up garbage settle before the idle minute begins.
      await new Promise((resolve) => setTimeout(resolve, 5_000));
      const footprints = await watchFootprints(
        started.map((child) => child.pid as number),
        idleSeconds * 1000,
      );
      measured.forEach((variant, index) => {
        rows.push(footprintRow(variant.name, variant.agent ? mode : '-', footprints[index] as Footprint));
      });
      for (const child of started) child.kill('SIGTERM');
      await runtime.stop();
      runtime = undefined;
    }
    return [
      {
        title: `agent-footprint: idle agent over ${idleSeconds} s after one applied push (MB = MiB; Node ${here.nodeVersion})`,
        columns: [
          'agent',
          'mode',
          'RSS max',
          'RSS median',
          'private',
          'file-backed',
          'CPU ms',
          'CPU %',
          `≤${goalMb} MB`,
        ],
        rows,
        notes: [
          "private = RssAnon (V8 heap, code compiled at run time, buffers); file-backed = RssFile (pages of the executable: Node's own code and data), shared with the page cache and dropped first under memory pressure",
          'compare the agents with the baselines: Node alone is the floor; asking over HTTP with fetch (undici and its WebAssembly HTTP parser) costs more than with node:http',
          'on the signal: one MQTT connection, a fetch when told and every safety interval (6 h); broker away: the control plane named a broker that does not answer, so the agent asks every 30 s and tries the broker again',
        ],
      },
      {
        title: 'agent-footprint: executables (single executables on the pinned Node)',
        columns: ['executable', 'MB', 'application blob KB', 'bundle KB', 'code cache'],
        rows: here.result.executables.map((entry) => [
          entry.name,
          entry.bytes / 1024 / 1024,
          entry.blobBytes / 1024,
          (here.result.bundles.find((item) => item.executable === entry.executable)?.bytes ?? 0) / 1024,
          entry.target.machine === here.machine ? 'yes' : 'no (made only for this machine)',
        ]),
        notes: ['the rest of each executable is the Node binary of its target, as published on npm'],
      },
    ];
  } finally {
    for (const child of children) child.kill('SIGTERM');
    await runtime?.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

function footprintRow(name: string, mode: string, footprint: Footprint): Array<string | number> {
  const mb = (kb: number) => kb / 1024;
  return [
    name,
    mode,
    mb(footprint.rssMaxKb),
    mb(footprint.rssMedianKb),
    mb(footprint.anonMedianKb),
    mb(footprint.fileMedianKb),
    footprint.cpuMs,
    (footprint.cpuMs / (footprint.seconds * 1000)) * 100,
    mb(footprint.rssMaxKb) <= goalMb ? 'yes' : 'NO',
  ];
}
