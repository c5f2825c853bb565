import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { consoleAssetKey, consoleAssetsDir, consoleFiles } from '../../lib/clients/cli/console/pages.ts';
import { elfMachines } from './elf.ts';

export const projectRoot = fileURLToPath(new URL('../../', import.meta.url));

/** Downloads, bundles and stamps live here, out of the way of git and of `dist/`. */
export const packagingCacheDir = fileURLToPath(
  new URL('../../node_modules/.cache/mesh-package/', import.meta.url),
);

/** A machine Mesh ships executables for; its Node binary is the npm package `node-linux-<arch>`. */
export type Target = {
  readonly name: 'linux-x64' | 'linux-arm64';
  readonly arch: 'x64' | 'arm64';
  readonly machine: number;
};

export const targets: readonly Target[] = [
  { name: 'linux-x64', arch: 'x64', machine: elfMachines.x64 },
  { name: 'linux-arm64', arch: 'arm64', machine: elfMachines.arm64 },
];

/** An entry point shipped as a single executable. */
export type ExecutableSpec = {
  readonly name: 'mesh-host' | 'mesh';
  /** Relative to the project root. */
  readonly entry: string;
  /** Node options baked into the executable (NODE_OPTIONS can still add to them). */
  readonly execArgv: readonly string[];
  /** What `<executable> --help` prints first, to check a built executable starts. */
  readonly usage: string;
  /** Files built into the executable, read with node:sea's getAsset: key → absolute path. */
  readonly assets?: Readonly<Record<string, string>>;
};

export const executables: readonly ExecutableSpec[] = [
  {
    name: 'mesh-host',
    entry: 'bin/mesh-host.ts',
    // The agent idles for its whole life, allocates little and runs little code: a small young
    // generation, V8's memory-saving mode, and its bytecode interpreter alone (no optimizing
    // tiers, whose compilers' pages and code it would never repay) keep it resident in less
    // memory; `npm run bench -- agent-footprint` shows it beside no flags.
    execArgv: ['--max-semi-space-size=1', '--optimize-for-size', '--no-sparkplug', '--no-maglev', '--no-opt'],
    usage: 'Usage: mesh-host',
  },
  {
    name: 'mesh',
    entry: 'bin/mesh.ts',
    execArgv: [],
    usage: 'Usage: mesh',
    // `mesh console` serves the console's pages from the executable itself
    assets: Object.fromEntries(
      consoleFiles.map(({ file }) => [consoleAssetKey(file), join(consoleAssetsDir, file)]),
    ),
  },
];

export const artifactName = (executable: ExecutableSpec, target: Target) =>
  `${executable.name}-${target.name}`;

export function targetNamed(name: string): Target | undefined {
  return targets.find((target) => target.name === name);
}

export function executableNamed(name: string): ExecutableSpec | undefined {
  return executables.find((executable) => executable.name === name);
}
