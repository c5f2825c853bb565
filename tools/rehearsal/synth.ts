import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/** The project: where cdk.json is. */
export const projectRoot = fileURLToPath(new URL('../../', import.meta.url));

/** `cdk synth` failed; its output says why. */
export class SynthFailedError extends Error {
  override name = 'SynthFailedError';
}

/**
 * Synthesizes the app into `outdir` exactly as `npm run synth` does (the cdk CLI, cdk.json,
 * bundling with the local esbuild, cdk-nag), offline: no credentials, no lookups. The CLI and
 * the app run on this Node (24), whatever node the PATH names first. Answers what the CLI
 * printed (cdk-nag's findings among it). `bundles: false` leaves the functions' code out (the
 * app's `bundle` context, bin/cdk-app.ts): the same template, its code assets stand-ins, in a
 * few seconds instead of a minute or more of esbuild.
 */
export async function synthesize(outdir: string, { bundles = true } = {}): Promise<string> {
  const cli = join(projectRoot, 'node_modules', 'aws-cdk', 'bin', 'cdk');
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      [
        cli,
        'synth',
        '--quiet',
        '--no-notices',
        '--output',
        outdir,
        ...(bundles ? [] : ['--context', 'bundle=false']),
      ],
      {
        cwd: projectRoot,
        env: {
          ...process.env,
          PATH: [dirname(process.execPath), process.env.PATH ?? ''].join(delimiter),
          AWS_EC2_METADATA_DISABLED: 'true',
          CDK_DISABLE_VERSION_CHECK: 'true',
          CDK_DISABLE_CLI_TELEMETRY: 'true',
        },
        maxBuffer: 64 * 1024 * 1024,
      },
    );
    return `${stdout}\n${stderr}`;
  } catch (error) {
    const {
      stdout = '',
      stderr = '',
      message,
    } = error as { stdout?: string; stderr?: string; message: string };
    throw new SynthFailedError(`cdk synth failed: ${message}\n${stdout}${stderr}`.trim());
  }
}

/**
 * What the synthesized assembly is made from: the app, the constructs, the function table, the
 * flow, and everything a bundle takes in (all of lib/ and functions/), with the locked
 * dependencies and cdk.json. A change to any of them is a new synthesis.
 */
const synthInputs = ['bin/cdk-app.ts', 'cdk.json', 'package-lock.json', 'lib', 'functions'];

function filesUnder(path: string): string[] {
  if (!existsSync(path)) return [];
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path)
    .sort()
    .flatMap((entry) => filesUnder(join(path, entry)));
}

export function synthInputsHash(root = projectRoot): string {
  const hash = createHash('sha256');
  for (const file of synthInputs.flatMap((input) => filesUnder(join(root, input)))) {
    hash.update(file.slice(root.length)).update('\0').update(readFileSync(file)).update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

export type CachedSynth = { readonly cdkOut: string; readonly output: string };

const cacheRoot = join(tmpdir(), 'mesh-synth');
const lockHeldFor = 10 * 60_000;
const unusedFor = 24 * 3600_000;

const pidAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/**
 * The app synthesized once per state of its inputs (synthInputsHash), kept in the temp folder
 * and shared by every project and run that asks for it. Two kinds: the template alone
 * (`bundles: false`: test/cdk/app.test.ts, test/cdk/template.test.ts, the rehearsal's judge),
 * and with every function bundled (test/package/function-bundles.test.ts, `npm run rehearse`).
 * A lock (a folder holding the synthesizer's pid) keeps two from synthesizing the same kind at
 * once; the other waits and takes the result. A failed synthesis is not kept.
 */
export async function cachedSynth({ bundles = true } = {}): Promise<CachedSynth> {
  const inputs = synthInputsHash();
  const key = `${inputs}${bundles ? '' : '-template'}`;
  const cdkOut = join(cacheRoot, key);
  const lock = `${cdkOut}.lock`;
  mkdirSync(cacheRoot, { recursive: true });
  for (;;) {
    if (existsSync(join(cdkOut, 'synth-output.txt'))) {
      const now = new Date();
      utimesSync(cdkOut, now, now);
      return { cdkOut, output: readFileSync(join(cdkOut, 'synth-output.txt'), 'utf8') };
    }
    try {
      mkdirSync(lock);
    } catch {
      const holder = Number(readFileSafe(join(lock, 'pid')));
      const age = Date.now() - statSafe(lock);
      if ((holder && !pidAlive(holder)) || age > lockHeldFor) rmSync(lock, { recursive: true, force: true });
      await new Promise((resolve) => setTimeout(resolve, 500));
      continue;
    }
    try {
      writeFileSync(join(lock, 'pid'), String(process.pid));
      const partial = `${cdkOut}.partial-${process.pid}`;
      rmSync(partial, { recursive: true, force: true });
      const output = await synthesize(partial, { bundles });
      writeFileSync(join(partial, 'synth-output.txt'), output);
      renameSync(partial, cdkOut);
      pruneUnused(inputs);
      return { cdkOut, output };
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  }
}

function readFileSafe(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

function statSafe(path: string): number {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return Date.now();
  }
}

/**
 * Syntheses of older inputs (either kind) not used for a day go; a run still using one has
 * touched it. So does what a synthesizer left half-written when it was killed (a worker timed out).
 */
function pruneUnused(keep: string) {
  for (const entry of readdirSync(cacheRoot)) {
    const partialOf = Number(/\.partial-(\d+)$/.exec(entry)?.[1]);
    if (partialOf && !pidAlive(partialOf)) rmSync(join(cacheRoot, entry), { recursive: true, force: true });
    if (entry.startsWith(keep) || entry.includes('.')) continue;
    const path = join(cacheRoot, entry);
    if (Date.now() - statSafe(path) > unusedFor) rmSync(path, { recursive: true, force: true });
  }
}
