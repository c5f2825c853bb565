import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { chmod, copyFile, mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { assertElfFor, hasInjectedApplication, seaFuse } from './elf.ts';
import type { PinnedNode } from './node-binaries.ts';
import { artifactName, type ExecutableSpec, packagingCacheDir, projectRoot, type Target } from './targets.ts';

const exec = promisify(execFile);
const require = createRequire(import.meta.url);

/** Bumped when the way an executable is made changes, so no earlier build is reused. */
const packagingFormat = 3;

/** An entry point bundled into one CommonJS file, as a single executable runs it. */
export type Bundle = { readonly path: string; readonly bytes: number; readonly sha256: string };

export type BuiltExecutable = {
  readonly executable: ExecutableSpec['name'];
  /** The file's name: `<executable>-<target>`. */
  readonly name: string;
  readonly path: string;
  readonly checksumPath: string;
  readonly sha256: string;
  readonly bytes: number;
  /** The application blob injected into the Node binary. */
  readonly blobBytes: number;
  readonly target: Target;
  /** An earlier build with the same inputs was still in place and intact. */
  readonly reused: boolean;
  readonly seconds: number;
};

/**
 * The version and build `--version` prints (lib/clients/common/build-info.ts): package.json's
 * version, and the commit the tree is at, `-dirty` when it holds changes not committed. Outside
 * a git checkout the build is `unknown`.
 */
export async function buildInfoHere(): Promise<{ version: string; build: string }> {
  const manifest = JSON.parse(await readFile(join(projectRoot, 'package.json'), 'utf8')) as {
    version: string;
  };
  try {
    const git = (...args: string[]) => exec('git', args, { cwd: projectRoot });
    const commit = (await git('rev-parse', '--short=12', 'HEAD')).stdout.trim();
    const changed = (await git('status', '--porcelain', '--untracked-files=no')).stdout.trim() !== '';
    return { version: manifest.version, build: `${commit}${changed ? '-dirty' : ''}` };
  } catch {
    return { version: manifest.version, build: 'unknown' };
  }
}

/**
 * Bundles SPEC's entry and everything it imports (no node_modules at run time), with the
 * release keys the agent trusts built in (lib/clients/host/release-keys.ts).
 */
export async function bundleEntry(
  spec: ExecutableSpec,
  releaseKeys: readonly string[] = [],
): Promise<Bundle> {
  const dir = join(packagingCacheDir, 'bundles');
  await mkdir(dir, { recursive: true });
  const path = join(dir, `${spec.name}.cjs`);
  const temporary = `${path}.tmp-${process.pid}`;
  const result = await build({
    entryPoints: [join(projectRoot, spec.entry)],
    outfile: temporary,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node24',
    // Names are kept, so an operator reading a stack trace from a node sees the real ones. Only
    // whitespace and comments go: a single non-Latin-1 character in a kept comment makes V8 hold
    // the whole source as two-byte text, twice its size in every agent's heap.
    minifyWhitespace: true,
    minifyIdentifiers: false,
    minifySyntax: false,
    legalComments: 'none',
    logLevel: 'silent',
    // A module that reads a file beside itself reads it through node:sea in the executable
    // (lib/clients/cli/console/pages.ts): its folder is never looked at there.
    define: {
      'import.meta.dirname': '""',
      MESH_BUILD: JSON.stringify(await buildInfoHere()),
      MESH_RELEASE_KEYS: JSON.stringify(releaseKeys),
    },
  });
  if (result.warnings.length > 0) {
    // A warning here (import.meta in CommonJS, say) is a fault that shows only on a node.
    throw new Error(
      `bundling ${spec.entry} warned: ${result.warnings.map((warning) => warning.text).join('; ')}`,
    );
  }
  await rename(temporary, path);
  const contents = await readFile(path);
  return { path, bytes: contents.length, sha256: createHash('sha256').update(contents).digest('hex') };
}

export type BuildRequest = {
  readonly spec: ExecutableSpec;
  readonly target: Target;
  readonly bundle: Bundle;
  readonly pinned: PinnedNode;
  /** The Node binary for TARGET, of the pinned version. */
  readonly base: string;
  readonly outDir: string;
};

/**
 * One single executable: the pinned Node makes the application blob from the bundle, postject
 * injects it into TARGET's Node binary, then the result is checked (ELF for TARGET's machine,
 * fuse flipped, and on this machine's own architecture it must start) and given a checksum
 * file `<name>.sha256` that `sha256sum -c` reads. An earlier build from the same inputs is
 * reused when the file is still the one its checksum names.
 */
export async function buildExecutable(request: BuildRequest): Promise<BuiltExecutable> {
  const started = performance.now();
  const { spec, target, bundle, pinned, outDir } = request;
  const name = artifactName(spec, target);
  const path = join(outDir, name);
  const checksumPath = `${path}.sha256`;
  // This machine can run what it builds for its own architecture, and only that.
  const runsHere = target.machine === pinned.machine;
  // Code cache is V8 code for the machine that makes the blob: only valid on that machine.
  const useCodeCache = runsHere;
  const inputs = digest(
    JSON.stringify({
      packagingFormat,
      node: pinned.version,
      target: target.name,
      bundle: bundle.sha256,
      useCodeCache,
      execArgv: spec.execArgv,
      assets: await assetDigests(spec),
      postject: postjectVersion(),
    }),
  );
  const stampPath = join(packagingCacheDir, 'stamps', `${digest(path).slice(0, 16)}.json`);
  const earlier = await reusable(stampPath, inputs, path, checksumPath);
  if (earlier)
    return {
      ...earlier,
      executable: spec.name,
      name,
      path,
      checksumPath,
      target,
      reused: true,
      seconds: since(started),
    };

  await mkdir(outDir, { recursive: true });
  const work = await mkdtemp(join(packagingCacheDir, `build-${name}-`));
  try {
    const blob = join(work, 'app.blob');
    const config = join(work, 'sea-config.json');
    // The blob keeps the main script's path as given: a name relative to the work folder makes
    // the same inputs give the same bytes, wherever and whenever they are built.
    const main = `${spec.name}.js`;
    await copyFile(bundle.path, join(work, main));
    await writeFile(
      config,
      JSON.stringify({
        main,
        output: blob,
        disableExperimentalSEAWarning: true,
        useSnapshot: false,
        useCodeCache,
        execArgv: spec.execArgv,
        ...(spec.assets ? { assets: spec.assets } : {}),
      }),
    );
    // V8 accepts code cache only under the flags it was made with: make it under execArgv.
    await run(pinned.path, [...spec.execArgv, '--experimental-sea-config', config], work);
    const executable = join(work, name);
    await copyFile(request.base, executable);
    await chmod(executable, 0o755);
    await run(
      pinned.path,
      [postjectCli(), executable, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', seaFuse],
      work,
    );
    await assertElfFor(executable, target.machine);
    if (!(await hasInjectedApplication(executable))) {
      throw new Error(`${name}: postject finished but the single executable fuse is not flipped`);
    }
    if (runsHere) await assertStarts(executable, spec);
    const sha256 = await sha256File(executable);
    const blobBytes = (await stat(blob)).size;
    const bytes = (await stat(executable)).size;
    await rename(executable, path);
    await writeAtomically(checksumPath, `${sha256}  ${name}\n`);
    await mkdir(join(stampPath, '..'), { recursive: true });
    await writeAtomically(stampPath, JSON.stringify({ inputs, sha256, bytes, blobBytes }));
    return {
      executable: spec.name,
      name,
      path,
      checksumPath,
      sha256,
      bytes,
      blobBytes,
      target,
      reused: false,
      seconds: since(started),
    };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** What the executable's built-in files are, by content: a changed page makes a new build. */
async function assetDigests(spec: ExecutableSpec): Promise<Record<string, string>> {
  const entries = await Promise.all(
    Object.entries(spec.assets ?? {}).map(async ([key, path]) => [key, await sha256File(path)] as const),
  );
  return Object.fromEntries(entries);
}

export async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

async function reusable(stampPath: string, inputs: string, path: string, checksumPath: string) {
  try {
    const stamp = JSON.parse(await readFile(stampPath, 'utf8')) as {
      inputs: string;
      sha256: string;
      bytes: number;
      blobBytes: number;
    };
    if (stamp.inputs !== inputs) return undefined;
    const checksum = (await readFile(checksumPath, 'utf8')).split(/\s+/)[0];
    if (checksum !== stamp.sha256 || (await sha256File(path)) !== stamp.sha256) return undefined;
    return { sha256: stamp.sha256, bytes: stamp.bytes, blobBytes: stamp.blobBytes };
  } catch {
    return undefined;
  }
}

/**
 * Runs the new executable with nothing from this environment (no PATH, no node): it must start,
 * and say nothing on stderr (V8 warns there when it rejects the code cache).
 */
async function assertStarts(executable: string, spec: ExecutableSpec): Promise<void> {
  const { stdout, stderr } = await exec(executable, ['--help'], { env: {}, cwd: '/' });
  if (!stdout.startsWith(spec.usage) || stderr !== '') {
    throw new Error(
      `${basename(executable)} --help printed ${JSON.stringify(stdout.slice(0, 80))}, and on stderr ${JSON.stringify(stderr)}`,
    );
  }
}

async function run(command: string, args: string[], cwd: string): Promise<void> {
  try {
    await exec(command, args, { cwd, maxBuffer: 16 * 1024 * 1024 });
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(
      `${basename(args[0] ?? command)} failed: ${failed.message}\n${failed.stdout}${failed.stderr}`,
    );
  }
}

async function writeAtomically(path: string, content: string): Promise<void> {
  const temporary = `${path}.tmp-${process.pid}`;
  await writeFile(temporary, content);
  await rename(temporary, path);
}

function postjectCli(): string {
  return require.resolve('postject/dist/cli.js');
}

function postjectVersion(): string {
  return (require('postject/package.json') as { version: string }).version;
}

const digest = (text: string) => createHash('sha256').update(text).digest('hex');
const since = (started: number) => (performance.now() - started) / 1000;
