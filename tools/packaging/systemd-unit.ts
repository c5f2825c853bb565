import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ExitCode } from '../../lib/clients/common/exit-codes.ts';

const exec = promisify(execFile);

export const hostUnitName = 'mesh-host.service';
/** Where the quick path in the README installs the executable. */
export const installedExecutable = '/usr/local/bin/mesh-host';
const template = new URL('./mesh-host.service', import.meta.url);

/** The systemd unit for `mesh-host run`, from the template, naming EXECUTABLE and the exit codes. */
export async function renderHostUnit(executable = installedExecutable): Promise<string> {
  const values: Record<string, string> = {
    executable,
    usage: String(ExitCode.usage),
    decommissioned: String(ExitCode.decommissioned),
  };
  return (await readFile(template, 'utf8')).replace(/\{\{(\w+)\}\}/g, (_, key: string) => {
    const value = values[key];
    if (value === undefined) throw new Error(`${hostUnitName} template names {{${key}}}, which has no value`);
    return value;
  });
}

export async function writeHostUnit(outDir: string): Promise<string> {
  const path = join(outDir, hostUnitName);
  await writeFile(path, await renderHostUnit());
  return path;
}

export type UnitVerification =
  | { readonly outcome: 'passed'; readonly systemd: number; readonly notes: readonly string[] }
  | { readonly outcome: 'refused'; readonly systemd: number; readonly code: number; readonly output: string }
  | { readonly outcome: 'unavailable'; readonly reason: string };

/** Keys systemd learnt in 254; an older one names them "unknown" and ignores them, as intended. */
const keysNewerThan = { version: 254, keys: ['RestartSteps', 'RestartMaxDelaySec'] } as const;

/**
 * `systemd-analyze verify` on the unit as written into dist/, with its ExecStart pointing at
 * EXECUTABLE (verify wants the binary to exist; installed, it is /usr/local/bin/mesh-host).
 * Anything it says fails the check, except an older systemd naming the backoff keys unknown.
 */
export async function verifyHostUnit(executable: string): Promise<UnitVerification> {
  const systemd = await systemdVersion();
  if (systemd === undefined) {
    return {
      outcome: 'unavailable',
      reason: 'systemd-analyze is not installed (Debian: apt-get install systemd)',
    };
  }
  const dir = await mkdtemp(join(tmpdir(), 'mesh-unit-'));
  try {
    const path = join(dir, hostUnitName);
    await writeFile(path, await renderHostUnit(executable));
    const { code, output } = await analyze(['verify', '--man=no', path]);
    const tolerated = (line: string) =>
      systemd < keysNewerThan.version &&
      keysNewerThan.keys.some((key) => line.includes(`Unknown key '${key}' in section [Service], ignoring.`));
    const lines = output.split('\n').filter((line) => line.trim() !== '');
    const problems = lines.filter((line) => !tolerated(line));
    if (code !== 0 || problems.length > 0) {
      return { outcome: 'refused', systemd, code, output };
    }
    return { outcome: 'passed', systemd, notes: lines.filter(tolerated) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function systemdVersion(): Promise<number | undefined> {
  const { code, output } = await analyze(['--version']);
  const match = /^systemd (\d+)/.exec(output);
  return code === 0 && match ? Number(match[1]) : undefined;
}

async function analyze(args: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await exec('systemd-analyze', args);
    return { code: 0, output: `${stdout}${stderr}` };
  } catch (error) {
    const failed = error as { code?: number | string; stdout?: string; stderr?: string };
    if (failed.code === 'ENOENT') return { code: -1, output: '' };
    return { code: Number(failed.code), output: `${failed.stdout ?? ''}${failed.stderr ?? ''}` };
  }
}
