import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type SignedRelease, verifyRelease } from '../../server/core/agent-release/release.ts';

/**
 * The agent's releases in its data folder, as the supervisor (supervisor.ts) runs them:
 *
 *   DIR/agent/releases/<version>/mesh-host   each release installed, kept until two newer are
 *   DIR/agent/slots.json                     {current?, previous?, trial?, outcome?}
 *   DIR/agent/release-keys.json              the keys trusted after a rotation (else the built-in ones)
 *
 * A release is verified whole (signature, architecture, size, digest) before anything is
 * written; it is then written beside the others and named the trial: the supervisor starts it,
 * and keeps it only once it has reached the control plane within the bound, else it goes back to
 * the current one. Both stay on disk, so a host always has one that worked.
 */
export type UpgradeOutcome = {
  readonly version: string;
  readonly outcome: 'upgraded' | 'rolled-back' | 'refused';
  readonly reason?: string;
  readonly at: string;
};

export type Slots = {
  /** The release that last reached the control plane; absent: the executable installed by hand. */
  readonly current?: string;
  readonly previous?: string;
  /** A release installed and not yet kept: started next, kept or rolled back by the supervisor. */
  readonly trial?: { readonly version: string; readonly startedAt?: string };
  /** What became of the last release tried, reported in the host's facts. */
  readonly outcome?: UpgradeOutcome;
};

export const agentFolder = (dir: string) => join(dir, 'agent');
export const releasePath = (dir: string, version: string) =>
  join(agentFolder(dir), 'releases', version, 'mesh-host');
const slotsPath = (dir: string) => join(agentFolder(dir), 'slots.json');
const keysPath = (dir: string) => join(agentFolder(dir), 'release-keys.json');

export async function readSlots(dir: string): Promise<Slots> {
  try {
    return JSON.parse(await readFile(slotsPath(dir), 'utf8')) as Slots;
  } catch {
    return {};
  }
}

export async function writeSlots(dir: string, slots: Slots): Promise<void> {
  await mkdir(agentFolder(dir), { recursive: true, mode: 0o700 });
  await atomicWrite(slotsPath(dir), JSON.stringify(slots, null, 2), 0o600);
}

/** The keys this host trusts: those a rotation left, else the ones built into it. */
export async function trustedKeys(dir: string, builtIn: readonly string[]): Promise<readonly string[]> {
  try {
    const kept = JSON.parse(await readFile(keysPath(dir), 'utf8')) as unknown;
    if (Array.isArray(kept) && kept.every((key) => typeof key === 'string') && kept.length > 0) return kept;
  } catch {}
  return builtIn;
}

export type InstallResult =
  | { readonly installed: true; readonly version: string }
  | { readonly installed: false; readonly refusal: string; readonly reason: string };

/**
 * Verifies RELEASE against EXECUTABLE's bytes and the keys this host trusts, and only then
 * writes it and names it the trial; a refusal writes nothing but the outcome the host reports.
 */
export async function installRelease(
  dir: string,
  release: SignedRelease,
  executable: Buffer,
  host: { readonly builtInKeys: readonly string[]; readonly arch: string; readonly now: () => Date },
): Promise<InstallResult> {
  const trusted = await trustedKeys(dir, host.builtInKeys);
  const verdict = verifyRelease(release, executable, { trusted, arch: host.arch });
  const version = release.manifest.version;
  const slots = await readSlots(dir);
  if (!verdict.ok) {
    await writeSlots(dir, {
      ...slots,
      outcome: { version, outcome: 'refused', reason: verdict.reason, at: host.now().toISOString() },
    });
    return { installed: false, refusal: verdict.refusal, reason: verdict.reason };
  }
  const path = releasePath(dir, version);
  await mkdir(join(path, '..'), { recursive: true, mode: 0o700 });
  await atomicWrite(path, executable, 0o755);
  if (release.manifest.releaseKeys) await atomicWrite(keysPath(dir), JSON.stringify(verdict.trusted), 0o600);
  await writeSlots(dir, { ...slots, trial: { version } });
  return { installed: true, version };
}

async function atomicWrite(path: string, data: string | Buffer, mode: number): Promise<void> {
  const temporary = `${path}.tmp-${process.pid}`;
  try {
    await writeFile(temporary, data, { mode, flush: true });
    await chmod(temporary, mode);
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}
