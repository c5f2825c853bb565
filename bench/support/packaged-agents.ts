import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { agentLines } from '../../lib/clients/host/log-lines.ts';
import { codedLineReader, type Heard } from '../../test/support/processes.ts';
import { developmentReleaseKey } from '../../tools/packaging/development-release-key.ts';
import { pinnedNode } from '../../tools/packaging/node-binaries.ts';
import { packageMesh } from '../../tools/packaging/package.ts';
import { executableNamed } from '../../tools/packaging/targets.ts';

const exec = promisify(execFile);

/** The flags the packaged `mesh-host` runs with, baked into its executable (tools/packaging/targets.ts). */
export const shippedFlags = executableNamed('mesh-host')?.execArgv ?? [];

/** The release artifacts for this machine: `mesh-host`, `mesh`, the agent's bundle and the pinned Node. */
export type PackagedHere = {
  readonly hostPath: string;
  readonly meshPath: string;
  readonly bundlePath: string;
  readonly nodePath: string;
  readonly nodeVersion: string;
  readonly result: Awaited<ReturnType<typeof packageMesh>>;
  /** The ELF machine of the pinned Node, which only executables for it can run here. */
  readonly machine: number;
};

/** Runs `npm run package`'s build (reusing what is current) and picks out this machine's artifacts. */
export async function packagedHere(): Promise<PackagedHere> {
  const result = await packageMesh({
    unit: false,
    releaseKeys: [developmentReleaseKey.publicKey],
    log: (line) => process.stdout.write(`  ${line}\n`),
  });
  const pinned = await pinnedNode();
  const here = (name: string) =>
    result.executables.find((entry) => entry.executable === name && entry.target.machine === pinned.machine);
  const host = here('mesh-host');
  const mesh = here('mesh');
  const bundle = result.bundles.find((entry) => entry.executable === 'mesh-host');
  if (!host || !mesh || !bundle) throw new Error('no executables for this machine were built');
  return {
    hostPath: host.path,
    meshPath: mesh.path,
    bundlePath: bundle.path,
    nodePath: pinned.path,
    nodeVersion: pinned.version,
    result,
    machine: pinned.machine,
  };
}

/** The packaged operator CLI against `api`, answering JSON. */
export const meshCli =
  (meshPath: string, api: string) =>
  (...args: string[]): Promise<unknown> =>
    exec(meshPath, ['--api', api, '--json', ...args]);

/** Issues a token to a file and enrols NODE's keys into DIR with the packaged `mesh-host`, as an operator would, then deletes the file. */
export async function enrolPackaged(
  mesh: (...args: string[]) => Promise<unknown>,
  hostPath: string,
  api: string,
  node: string,
  dir: string,
): Promise<void> {
  const tokenFile = join(dir, '..', `${node}.token`);
  mkdirSync(dir, { recursive: true });
  await mesh('token', 'issue', node, '--out', tokenFile);
  try {
    await exec(hostPath, ['enrol', '--api', api, '--node', node, '--token-file', tokenFile, '--dir', dir], {
      env: {},
    });
  } finally {
    rmSync(tokenFile, { force: true });
  }
}

/** A running `mesh-host run` (or a baseline), with everything it printed so far, and its coded lines. */
export type WatchedProcess = { readonly child: ChildProcess; output(): string; heard(): readonly Heard[] };

/** Its lines are JSON (MESH_LOG_FORMAT=json), so a bench reads codes and fields, not prose. */
export function spawnWatched(binary: string, args: readonly string[]): WatchedProcess {
  const child = spawn(binary, args, { env: { MESH_LOG_FORMAT: 'json' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const heard: Heard[] = [];
  const keep = () => {
    const read = codedLineReader((said) => heard.push(said));
    return (chunk: Buffer) => {
      output += chunk.toString();
      read(chunk.toString());
    };
  };
  child.stdout?.on('data', keep());
  child.stderr?.on('data', keep());
  return { child, output: () => output, heard: () => heard };
}

/** Whether the agent said it applied `revision` (any revision when none is named). */
export const saidApplied = (agent: WatchedProcess, revision?: number) =>
  agent
    .heard()
    .some(
      (said) =>
        said.code === agentLines.applied.code && (revision === undefined || said.revision === revision),
    );

/** Waits for `check`, checking every `everyMs`; a timeout names what was awaited and shows the output. */
export async function untilSeen(
  check: () => boolean,
  what: string,
  output: () => string,
  options: { timeoutMs?: number; everyMs?: number } = {},
): Promise<void> {
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; its output:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, options.everyMs ?? 200));
  }
}
