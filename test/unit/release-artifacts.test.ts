import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliDecompressSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import {
  newReleaseKey,
  signedByTrusted,
  signedRelease,
} from '../../lib/server/core/agent-release/release.ts';
import type { BuiltExecutable } from '../../tools/packaging/executable.ts';
import { releaseSigningKey, writeRelease } from '../../tools/packaging/release-artifacts.ts';
import { targets } from '../../tools/packaging/targets.ts';

/** What `npm run package --sign-key` writes beside a mesh-host (tools/packaging/release-artifacts.ts). */
const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});
const key = newReleaseKey();

function built(): BuiltExecutable {
  const folder = mkdtempSync(join(tmpdir(), 'mesh-release-artifacts-'));
  folders.push(folder);
  const path = join(folder, 'mesh-host-linux-x64');
  const bytes = Buffer.from(`#!/bin/sh\n# ${'an executable compresses '.repeat(4000)}\n`);
  writeFileSync(path, bytes);
  return {
    executable: 'mesh-host',
    name: 'mesh-host-linux-x64',
    path,
    checksumPath: `${path}.sha256`,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    bytes: bytes.length,
    blobBytes: 0,
    target: targets[0] as BuiltExecutable['target'],
    reused: false,
    seconds: 0,
  } as BuiltExecutable;
}

describe('a release written by npm run package --sign-key', () => {
  it('is the executable compressed beside it and a manifest naming both, signed', async () => {
    const executable = built();
    const release = await writeRelease(executable, { version: '1.2.3', build: 'abc' }, key.privateKeyPem);
    const signed = signedRelease.parse(JSON.parse(readFileSync(release.manifestPath, 'utf8')));
    expect(signedByTrusted(signed, [key.publicKey])).toBe(true);
    const packed = readFileSync(release.transferPath);
    expect(signed.manifest).toEqual({
      version: '1.2.3',
      build: 'abc',
      arch: 'x64',
      sha256: executable.sha256,
      bytes: executable.bytes,
      transfer: {
        encoding: 'br',
        bytes: packed.length,
        sha256: createHash('sha256').update(packed).digest('hex'),
      },
    });
    expect(brotliDecompressSync(packed)).toEqual(readFileSync(executable.path));
    expect(release.transferBytes).toBeLessThan(executable.bytes / 10);
  });

  it('names no transfer when asked for uncompressed, for agents from before compressed releases', async () => {
    const executable = built();
    const release = await writeRelease(executable, { version: '1.2.3', build: 'abc' }, key.privateKeyPem, {
      compress: false,
    });
    const signed = signedRelease.parse(JSON.parse(readFileSync(release.manifestPath, 'utf8')));
    expect(signed.manifest).not.toHaveProperty('transfer');
    expect(existsSync(`${executable.path}.br`)).toBe(false);
  });

  it('takes only an Ed25519 private key, saying what it found', () => {
    expect(releaseSigningKey(key.privateKeyPem)).toBe(key.privateKeyPem);
    expect(releaseSigningKey('not a key')).toBeInstanceOf(Error);
    expect(releaseSigningKey(key.publicKey)).toBeInstanceOf(Error);
  });
});
