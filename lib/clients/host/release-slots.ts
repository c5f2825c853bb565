import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { chmod, mkdir, open, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createBrotliDecompress } from 'node:zlib';
import {
  type ReleaseRefusal,
  type ReleaseVerdict,
  type SignedRelease,
  transferOf,
  verifyExecutable,
  verifyManifest,
  verifyTransfer,
} from '../../server/core/agent-release/release.ts';

/**
 * The agent's releases in its data folder, as the supervisor (supervisor.ts) runs them:
 *
 *   DIR/agent/releases/<version>/mesh-host   each release installed, kept until two newer are
 *   DIR/agent/slots.json                     {current?, previous?, trial?, outcome?}
 *   DIR/agent/release-keys.json              the keys trusted after a rotation (else the built-in ones)
 *
 * A release's signature and architecture are verified before its executable is fetched, its size
 * and digest as it streams in; only then is it moved beside the others and named the trial: the
 * supervisor starts it, and keeps it only once it has reached the control plane within the bound,
 * else it goes back to the current one. Both stay on disk, so a host always has one that worked.
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
 * Verifies RELEASE against the executable and the keys this host trusts, and only then names it
 * the trial. The signature and architecture are checked before a byte of EXECUTABLE is read; its
 * bytes then stream to a temporary file beside the releases, counted and hashed as they come (never
 * whole in memory), and are moved into place only when their size and SHA-256 are the manifest's.
 * A refusal replaces nothing and keeps nothing but the outcome the host reports; an executable
 * that fails to arrive (the download breaks) leaves nothing behind and is thrown.
 */
export async function installRelease(
  dir: string,
  release: SignedRelease,
  executable:
    | Buffer
    | AsyncIterable<Uint8Array>
    | (() => Promise<AsyncIterable<Uint8Array> | Iterable<Uint8Array>>),
  host: { readonly builtInKeys: readonly string[]; readonly arch: string; readonly now: () => Date },
): Promise<InstallResult> {
  const trusted = await trustedKeys(dir, host.builtInKeys);
  const { manifest } = release;
  const refused = async (verdict: { readonly refusal: ReleaseRefusal; readonly reason: string }) => {
    const slots = await readSlots(dir);
    await writeSlots(dir, {
      ...slots,
      outcome: {
        version: manifest.version,
        outcome: 'refused',
        reason: verdict.reason,
        at: host.now().toISOString(),
      },
    });
    return { installed: false as const, refusal: verdict.refusal, reason: verdict.reason };
  };
  const signed = verifyManifest(release, { trusted, arch: host.arch });
  if (!signed.ok) return refused(signed);
  await mkdir(agentFolder(dir), { recursive: true, mode: 0o700 });
  // what an install killed midway left (named by its process's id): one install runs at a time
  for (const name of await readdir(agentFolder(dir)))
    if (name.startsWith('incoming-'))
      await rm(join(agentFolder(dir), name), { force: true, recursive: true });
  const incoming = join(agentFolder(dir), `incoming-${process.pid}`);
  const transfer = transferOf(manifest);
  // a compressed release is kept as it came until its digest is checked, then decompressed beside
  const downloaded = transfer.encoding ? `${incoming}.${transfer.encoding}` : incoming;
  try {
    const source =
      typeof executable === 'function'
        ? await executable()
        : Buffer.isBuffer(executable)
          ? [executable]
          : executable;
    const counted = await streamTo(downloaded, source, transfer.bytes);
    let wrong = transfer.encoding
      ? verifyTransfer(manifest, counted.bytes, counted.sha256)
      : verifyExecutable(manifest, counted.bytes, counted.sha256);
    if (transfer.encoding) {
      wrong ??= await decompressed(downloaded, incoming, manifest);
      await rm(downloaded, { force: true });
    }
    if (wrong) {
      await rm(incoming, { force: true });
      return refused(wrong);
    }
    const path = releasePath(dir, manifest.version);
    await mkdir(join(path, '..'), { recursive: true, mode: 0o700 });
    await rename(incoming, path);
  } catch (error) {
    await rm(incoming, { force: true });
    await rm(downloaded, { force: true });
    throw error;
  }
  if (manifest.releaseKeys) await atomicWrite(keysPath(dir), JSON.stringify(signed.trusted), 0o600);
  await writeSlots(dir, { ...(await readSlots(dir)), trial: { version: manifest.version } });
  return { installed: true, version: manifest.version };
}

/**
 * The executable of a compressed download whose digest held, written to PATH: its size and
 * digest checked as for a download that is the executable (verifyExecutable); one that does not
 * decompress is refused, as its signed digest says it is what the release key vouched for.
 */
async function decompressed(
  download: string,
  path: string,
  manifest: SignedRelease['manifest'],
): Promise<Extract<ReleaseVerdict, { ok: false }> | undefined> {
  let counted: { readonly bytes: number; readonly sha256: string };
  try {
    counted = await streamTo(path, createReadStream(download).pipe(createBrotliDecompress()), manifest.bytes);
  } catch (error) {
    // zlib's own errors say the data is not what was signed; a file system's (ENOSPC, EMFILE)
    // are this machine's, thrown to be tried again as a broken download is, never a refusal
    if (!isZlibError(error)) throw error;
    return {
      ok: false,
      refusal: 'wrong-digest',
      reason: `release ${manifest.version}: its download does not decompress (${(error as Error).message})`,
    };
  }
  return verifyExecutable(manifest, counted.bytes, counted.sha256);
}

/** An error of zlib's decompressing (`Z_BUF_ERROR`, Brotli's `ERR__ERROR_FORMAT_…`): a negative errno and no syscall. */
const isZlibError = (error: unknown): boolean => {
  const { errno, syscall, path } = error as { errno?: unknown; syscall?: unknown; path?: unknown };
  return typeof errno === 'number' && errno < 0 && syscall === undefined && path === undefined;
};

/**
 * Writes SOURCE to PATH (mode 0755, flushed), counting and hashing it; stops reading once it
 * runs past LIMIT bytes, so a download larger than its manifest costs no more than the manifest.
 */
async function streamTo(
  path: string,
  source: Iterable<Uint8Array> | AsyncIterable<Uint8Array>,
  limit: number,
): Promise<{ readonly bytes: number; readonly sha256: string }> {
  const hash = createHash('sha256');
  let bytes = 0;
  const file = await open(path, 'w', 0o755);
  try {
    for await (const chunk of source) {
      bytes += chunk.length;
      if (bytes > limit) break;
      hash.update(chunk);
      await file.write(chunk);
    }
    await file.sync();
    await file.chmod(0o755);
  } finally {
    await file.close();
  }
  return { bytes, sha256: hash.digest('hex') };
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
