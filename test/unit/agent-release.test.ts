import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliCompressSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { ReleaseUpgrader } from '../../lib/clients/host/agent/agent-upgrade.ts';
import { installRelease, readSlots, releasePath, writeSlots } from '../../lib/clients/host/release-slots.ts';
import { superviseAgent } from '../../lib/clients/host/supervisor.ts';
import {
  newReleaseKey,
  type ReleaseManifest,
  signedRelease,
  signRelease,
} from '../../lib/server/core/agent-release/release.ts';

/**
 * Releases of mesh-host as a host takes them (release-slots.ts) and the supervisor that tries
 * them (supervisor.ts), with real processes: each "release" is a small shell script standing in
 * for the executable, run with the arguments and environment the supervisor gives it.
 */
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
const folder = () => {
  const dir = mkdtempSync(join(tmpdir(), 'mesh-release-'));
  dirs.push(dir);
  return dir;
};

const keyA = newReleaseKey();
const keyB = newReleaseKey();
const now = () => new Date('2026-12-06T00:00:00.000Z');

function release(version: string, script: string, key = keyA, extra: Partial<ReleaseManifest> = {}) {
  const executable = Buffer.from(`#!/bin/sh\n${script}\n`);
  const manifest: ReleaseManifest = {
    version,
    arch: process.arch as 'x64' | 'arm64',
    sha256: createHash('sha256').update(executable).digest('hex'),
    bytes: executable.length,
    ...extra,
  };
  return { signed: signRelease(manifest, key.privateKeyPem), executable };
}
const host = (builtInKeys = [keyA.publicKey]) => ({ builtInKeys, arch: process.arch, now });

describe('a release a host installs', () => {
  it('is refused before anything is written when no trusted key signed it, or its bytes are not the ones signed', async () => {
    const dir = folder();
    const forged = release('2.0.0', 'exit 0', keyB);
    expect(await installRelease(dir, forged.signed, forged.executable, host())).toMatchObject({
      installed: false,
      refusal: 'bad-signature',
    });
    const tampered = release('2.0.0', 'exit 0');
    const swapped = Buffer.from(tampered.executable.toString().replace('exit 0', 'exit 1'));
    expect(await installRelease(dir, tampered.signed, swapped, host())).toMatchObject({
      refusal: 'wrong-digest',
    });
    const edited = { ...tampered.signed, manifest: { ...tampered.signed.manifest, version: '2.0.1' } };
    expect(await installRelease(dir, edited, tampered.executable, host())).toMatchObject({
      refusal: 'bad-signature',
    });
    expect(existsSync(releasePath(dir, '2.0.0'))).toBe(false);
    expect(await readSlots(dir)).toEqual({
      outcome: {
        version: '2.0.1',
        outcome: 'refused',
        reason: expect.stringContaining('no key'),
        at: now().toISOString(),
      },
    });
    expect(signedRelease.safeParse(JSON.parse(JSON.stringify(tampered.signed))).success).toBe(true);
  });

  it('rotates the release keys by a release the old key signed: the new key is trusted from then on, the old one not', async () => {
    const dir = folder();
    const rotating = release('2.0.0', 'exit 0', keyA, { releaseKeys: [keyB.publicKey] });
    expect(await installRelease(dir, rotating.signed, rotating.executable, host())).toEqual({
      installed: true,
      version: '2.0.0',
    });
    const byOld = release('2.1.0', 'exit 0', keyA);
    const byNew = release('2.1.0', 'exit 0', keyB);
    expect(await installRelease(dir, byOld.signed, byOld.executable, host())).toMatchObject({
      refusal: 'bad-signature',
    });
    expect(await installRelease(dir, byNew.signed, byNew.executable, host())).toMatchObject({
      installed: true,
    });
  });
});

describe('a release streamed in', () => {
  async function* chunks(bytes: Buffer, size: number, fail?: Error) {
    for (let at = 0; at < bytes.length; at += size) {
      if (fail && at > 0) throw fail;
      yield bytes.subarray(at, at + size);
    }
  }
  const leftovers = (dir: string) =>
    readdirSync(join(dir, 'agent')).filter((name) => name.startsWith('incoming'));

  it('is written a chunk at a time, checked as it comes, and only then named the trial', async () => {
    const dir = folder();
    const good = release('2.0.0', `echo ${'x'.repeat(5000)}`);
    expect(await installRelease(dir, good.signed, chunks(good.executable, 1000), host())).toEqual({
      installed: true,
      version: '2.0.0',
    });
    expect(readFileSync(releasePath(dir, '2.0.0'))).toEqual(good.executable);
    expect(statSync(releasePath(dir, '2.0.0')).mode & 0o777).toBe(0o755);
    expect((await readSlots(dir)).trial).toEqual({ version: '2.0.0' });
    expect(leftovers(dir)).toEqual([]);
  });

  it('is refused before it is fetched when its signature fails, and leaves nothing when it is longer than signed or breaks off', async () => {
    const dir = folder();
    await writeSlots(dir, { current: '1.0.0' });
    const forged = release('2.0.0', 'exit 0', keyB);
    let fetched = false;
    const fetch = async () => {
      fetched = true;
      return chunks(forged.executable, 10);
    };
    expect(await installRelease(dir, forged.signed, fetch, host())).toMatchObject({
      refusal: 'bad-signature',
    });
    expect(fetched).toBe(false);
    const signed = release('2.0.0', 'exit 0');
    const longer = Buffer.concat([signed.executable, Buffer.alloc(1 << 20)]);
    expect(await installRelease(dir, signed.signed, chunks(longer, 64), host())).toMatchObject({
      refusal: 'wrong-size',
    });
    await expect(
      installRelease(dir, signed.signed, chunks(signed.executable, 4, new Error('connection reset')), host()),
    ).rejects.toThrow('connection reset');
    expect(existsSync(releasePath(dir, '2.0.0'))).toBe(false);
    expect(leftovers(dir)).toEqual([]);
    expect(await readSlots(dir)).toMatchObject({ current: '1.0.0', outcome: { outcome: 'refused' } });
    expect((await readSlots(dir)).trial).toBeUndefined();
  });
});

describe('a compressed release', () => {
  /** A release whose manifest names its executable compressed with Brotli, as `npm run package --sign-key` writes it. */
  function compressed(version: string, script: string, body?: (packed: Buffer) => Buffer) {
    const executable = Buffer.from(`#!/bin/sh\n${script}\n# ${'padding that compresses '.repeat(400)}\n`);
    const packed = brotliCompressSync(executable);
    const sent = body ? body(packed) : packed;
    const manifest: ReleaseManifest = {
      version,
      arch: process.arch as 'x64' | 'arm64',
      sha256: createHash('sha256').update(executable).digest('hex'),
      bytes: executable.length,
      transfer: {
        encoding: 'br',
        sha256: createHash('sha256').update(packed).digest('hex'),
        bytes: packed.length,
      },
    };
    return { signed: signRelease(manifest, keyA.privateKeyPem), executable, packed: sent };
  }
  const leftovers = (dir: string) =>
    readdirSync(join(dir, 'agent')).filter((name) => name.startsWith('incoming'));

  it('is downloaded compressed, checked, and installed as the executable its manifest names', async () => {
    const dir = folder();
    // what an install killed midway left behind is cleared first
    mkdirSync(join(dir, 'agent'), { recursive: true });
    writeFileSync(join(dir, 'agent', 'incoming-99999.br'), 'left by a killed install');
    writeFileSync(join(dir, 'agent', 'incoming-99999'), 'left by a killed install');
    const good = compressed('2.0.0', 'exit 0');
    expect(good.packed.length).toBeLessThan(good.executable.length / 10);
    expect(await installRelease(dir, good.signed, good.packed, host())).toEqual({
      installed: true,
      version: '2.0.0',
    });
    expect(readFileSync(releasePath(dir, '2.0.0'))).toEqual(good.executable);
    expect(statSync(releasePath(dir, '2.0.0')).mode & 0o777).toBe(0o755);
    expect(leftovers(dir)).toEqual([]);
  });

  it('is tried again, not refused, when this machine cannot write the executable as it decompresses', async () => {
    const dir = folder();
    await writeSlots(dir, { current: '1.0.0' });
    const good = compressed('2.0.0', 'exit 0');
    // where the executable is decompressed to is a full disk: /dev/full answers ENOSPC
    const fullDisk = async () => {
      symlinkSync('/dev/full', join(dir, 'agent', `incoming-${process.pid}`));
      return [good.packed];
    };
    await expect(installRelease(dir, good.signed, fullDisk, host())).rejects.toThrow(/ENOSPC/);
    expect((await readSlots(dir)).outcome).toBeUndefined();
    expect(existsSync(releasePath(dir, '2.0.0'))).toBe(false);
  });

  it('is refused, leaving nothing, when its download is not the one signed, or a signed download is not the executable', async () => {
    const dir = folder();
    await writeSlots(dir, { current: '1.0.0' });
    const swapped = compressed('2.0.0', 'exit 0', () =>
      brotliCompressSync(Buffer.from('#!/bin/sh\nexit 1\n')),
    );
    expect(await installRelease(dir, swapped.signed, swapped.packed, host())).toMatchObject({
      refusal: expect.stringMatching(/^wrong-(size|digest)$/),
      reason: expect.stringContaining('the download'),
    });
    // signed as it is, yet not the executable the manifest names: the key vouched for a wrong pair
    const good = compressed('2.0.0', 'exit 0');
    const mispaired = signRelease(
      { ...good.signed.manifest, sha256: createHash('sha256').update('another').digest('hex') },
      keyA.privateKeyPem,
    );
    expect(await installRelease(dir, mispaired, good.packed, host())).toMatchObject({
      refusal: 'wrong-digest',
      reason: expect.stringContaining("the executable's SHA-256"),
    });
    const garbage = Buffer.from('not brotli at all, but signed as the download');
    const undecodable = signRelease(
      {
        ...good.signed.manifest,
        transfer: {
          encoding: 'br',
          sha256: createHash('sha256').update(garbage).digest('hex'),
          bytes: garbage.length,
        },
      },
      keyA.privateKeyPem,
    );
    expect(await installRelease(dir, undecodable, garbage, host())).toMatchObject({
      refusal: 'wrong-digest',
      reason: expect.stringContaining('does not decompress'),
    });
    expect(existsSync(releasePath(dir, '2.0.0'))).toBe(false);
    expect(leftovers(dir)).toEqual([]);
    expect((await readSlots(dir)).trial).toBeUndefined();
  });
});

describe('the agent asked for another version', () => {
  /** The host route as the control plane answers it: the releases published, and a download of each. */
  function hostRoute(published: Record<string, ReturnType<typeof release>>) {
    const asked: string[] = [];
    const downloaded: string[] = [];
    const api = {
      send: async (_method: string, path: string) => {
        asked.push(path);
        const version = path.split('/')[4] as string;
        const found = published[version];
        if (!found)
          return { status: 404, headers: new Headers(), body: { error: { code: 'release_not_found' } } };
        return {
          status: 200,
          headers: new Headers(),
          body: {
            release: { ...found.signed, publishedAt: 'x', publishedBy: 'y' },
            download: { method: 'GET', url: `http://x/${version}` },
          },
        };
      },
    };
    const download = async (transfer: { url: string }) => {
      downloaded.push(transfer.url);
      const found = published[transfer.url.split('/').at(-1) as string];
      return [found?.executable ?? Buffer.alloc(0)];
    };
    return { api, download, asked, downloaded };
  }
  const upgrader = (dir: string, route: ReturnType<typeof hostRoute>, supervised = true) =>
    new ReleaseUpgrader({
      version: '1.0.0',
      dir,
      node: 'web1',
      api: route.api as never,
      arch: process.arch,
      builtInKeys: () => [keyA.publicKey],
      supervised,
      now,
      download: route.download,
    });

  it('fetches the release by the node’s own route, streams it in and names it the trial', async () => {
    const dir = folder();
    const route = hostRoute({ '2.0.0': release('2.0.0', 'exit 0') });
    expect(await upgrader(dir, route).upgrade('2.0.0')).toEqual({ installed: true });
    expect(route.asked).toEqual([`/hosts/web1/releases/2.0.0/${process.arch}`]);
    expect((await readSlots(dir)).trial).toEqual({ version: '2.0.0' });
  });

  it('refuses a bad signature before downloading, and does not ask again for a version refused or rolled back', async () => {
    const dir = folder();
    const route = hostRoute({
      '2.0.0': release('2.0.0', 'exit 0', keyB),
      '3.0.0': release('3.0.0', 'exit 0'),
    });
    expect(await upgrader(dir, route).upgrade('2.0.0')).toEqual({
      installed: false,
      reason: expect.stringMatching(/^agent 2\.0\.0 was refused: .*no key this host trusts/),
    });
    expect(route.downloaded).toEqual([]);
    expect(existsSync(releasePath(dir, '2.0.0'))).toBe(false);
    expect(await upgrader(dir, route).upgrade('2.0.0')).toMatchObject({ installed: false });
    expect(route.asked).toHaveLength(1);
    await writeSlots(dir, {
      outcome: {
        version: '3.0.0',
        outcome: 'rolled-back',
        reason: 'it exited 3 before it reported',
        at: 'x',
      },
    });
    expect(await upgrader(dir, route).upgrade('3.0.0')).toEqual({
      installed: false,
      reason: 'agent 3.0.0 was rolled back: it exited 3 before it reported',
    });
    expect(route.asked).toHaveLength(1);
  });

  it('says a version not published, and an agent without its supervisor installs nothing', async () => {
    const dir = folder();
    const route = hostRoute({ '2.0.0': release('2.0.0', 'exit 0') });
    expect(await upgrader(dir, route).upgrade('9.0.0')).toEqual({
      installed: false,
      reason: `agent 9.0.0 is not published for ${process.arch}`,
    });
    expect(await upgrader(dir, route, false).upgrade('2.0.0')).toMatchObject({
      installed: false,
      reason: expect.stringContaining('without mesh-host supervise'),
    });
    expect((await readSlots(dir)).trial).toBeUndefined();
  });
});

describe('the supervisor', () => {
  /** The executable installed by hand: notes that it ran, then ends as a stopped agent does. */
  function installed(dir: string) {
    const path = join(dir, 'installed.sh');
    writeFileSync(path, `#!/bin/sh\necho "$@" > "${dir}/installed-ran"\nexit 0\n`, { mode: 0o755 });
    return path;
  }
  const supervise = (dir: string, signal = new AbortController().signal, trialBoundMs = 20_000) => {
    const lines: string[] = [];
    const done = superviseAgent({
      dir,
      args: ['run', '--dir', dir],
      installed: installed(dir),
      trialBoundMs,
      pollMs: 50,
      say: (line) => lines.push(line),
      signal,
      now,
    });
    return { done, lines };
  };

  it('rolls back a release that crashes at start and runs the one before, reporting why', async () => {
    const dir = folder();
    const crashing = release('2.0.0', 'exit 3');
    await installRelease(dir, crashing.signed, crashing.executable, host());

    const { done, lines } = supervise(dir);

    expect(await done).toBe(0);
    expect(readFileSync(join(dir, 'installed-ran'), 'utf8').trim()).toBe(`run --dir ${dir}`);
    expect(await readSlots(dir)).toEqual({
      outcome: {
        version: '2.0.0',
        outcome: 'rolled-back',
        reason: 'it exited 3 before it reported',
        at: now().toISOString(),
      },
    });
    expect(lines).toContain('release 2.0.0 rolled back: it exited 3 before it reported');
  });

  it('rolls back a release that cannot reach the control plane within the bound, and keeps both on disk', async () => {
    const dir = folder();
    await writeSlots(dir, { current: '1.0.0' });
    const good = release('1.0.0', `echo "$@" > "${dir}/current-ran"; exit 0`);
    await installRelease(dir, good.signed, good.executable, host());
    await writeSlots(dir, { current: '1.0.0' });
    const silent = release('2.0.0', 'exec sleep 30');
    await installRelease(dir, silent.signed, silent.executable, host());

    const { done } = supervise(dir, undefined, 1_000);

    expect(await done).toBe(0);
    expect(existsSync(join(dir, 'current-ran'))).toBe(true);
    expect(await readSlots(dir)).toMatchObject({
      current: '1.0.0',
      outcome: { version: '2.0.0', outcome: 'rolled-back', reason: 'it did not report within 1 s' },
    });
    expect(existsSync(releasePath(dir, '2.0.0'))).toBe(true);
  });

  it('keeps a release that reports, the one before as previous', async () => {
    const dir = folder();
    const reporting = release('2.0.0', 'echo reached > "$MESH_HOST_TRIAL_REACHED"; exec sleep 30');
    await installRelease(dir, reporting.signed, reporting.executable, host());
    await writeSlots(dir, { current: '1.0.0', trial: { version: '2.0.0' } });
    const controller = new AbortController();

    const { done } = supervise(dir, controller.signal);
    for (let wait = 0; wait < 200 && (await readSlots(dir)).current !== '2.0.0'; wait += 1)
      await new Promise((resolve) => setTimeout(resolve, 50));
    controller.abort();

    expect(await done).toBe(0);
    expect(await readSlots(dir)).toEqual({
      current: '2.0.0',
      previous: '1.0.0',
      outcome: { version: '2.0.0', outcome: 'upgraded', at: now().toISOString() },
    });
  });
});
