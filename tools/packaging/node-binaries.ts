import { execFile } from 'node:child_process';
import { access, mkdir, mkdtemp, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { assertElfFor, readElfHeader } from './elf.ts';
import { packagingCacheDir, projectRoot, type Target } from './targets.ts';

const exec = promisify(execFile);

/**
 * The Node the project pins (the `node` devDependency, which installs the npm package
 * `node-linux-<arch>` for this machine). It makes every application blob, so the blobs and
 * the binaries they go into are one Node version, as single executables require.
 */
export type PinnedNode = {
  readonly version: string;
  readonly path: string;
  readonly machine: number;
};

export async function pinnedNode(): Promise<PinnedNode> {
  const dir = join(projectRoot, 'node_modules', 'node');
  const { version } = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')) as { version: string };
  const path = join(dir, 'bin', 'node');
  const { stdout } = await exec(path, ['--version']);
  if (stdout.trim() !== `v${version}`) {
    throw new Error(`${path} says it is Node ${stdout.trim()}, not v${version}: run npm ci`);
  }
  return { version, path, machine: (await readElfHeader(path)).machine };
}

/**
 * The pinned Node's binary for TARGET: the installed one when it is for the same machine, else
 * the npm package `node-<target>` of the same version, fetched once with `npm pack` (which
 * checks the registry's integrity hash) and kept in the packaging cache.
 */
export async function nodeBinaryFor(
  target: Target,
  pinned: PinnedNode,
  log: (line: string) => void,
): Promise<string> {
  if (pinned.machine === target.machine) return pinned.path;
  const packageName = `node-${target.name}`;
  const kept = join(packagingCacheDir, 'node', `${packageName}-${pinned.version}`, 'node');
  if (await exists(kept)) {
    await assertElfFor(kept, target.machine);
    return kept;
  }
  log(`fetching ${packageName}@${pinned.version} from the npm registry (npm pack); kept for next time`);
  await mkdir(packagingCacheDir, { recursive: true });
  const work = await mkdtemp(join(packagingCacheDir, 'fetch-'));
  try {
    const { stdout } = await exec(
      'npm',
      ['pack', `${packageName}@${pinned.version}`, '--pack-destination', work, '--json', '--silent'],
      { maxBuffer: 16 * 1024 * 1024 },
    );
    const [packed] = JSON.parse(stdout) as Array<{ name: string; version: string; filename: string }>;
    if (packed?.name !== packageName || packed.version !== pinned.version) {
      throw new Error(`npm pack ${packageName}@${pinned.version} gave ${packed?.name}@${packed?.version}`);
    }
    await exec('tar', ['-xzf', join(work, packed.filename), '-C', work, 'package/bin/node']);
    const extracted = join(work, 'package', 'bin', 'node');
    await assertElfFor(extracted, target.machine);
    await mkdir(join(kept, '..'), { recursive: true });
    await rename(extracted, kept);
    return kept;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}
