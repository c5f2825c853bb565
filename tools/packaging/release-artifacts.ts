import { createHash, createPrivateKey } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { constants, createBrotliCompress } from 'node:zlib';
import {
  manifestFileOf,
  type ReleaseManifest,
  signRelease,
  transferFileOf,
} from '../../lib/server/core/agent-release/release.ts';
import type { BuiltExecutable } from './executable.ts';

/**
 * The release of a mesh-host built, as `mesh agent publish FILE` takes it (docs/host-agent.md,
 * "Releases"): FILE.br, the executable compressed with Brotli (what the release store keeps and
 * each host downloads: a fleet upgrade costs the compressed size a host), and
 * FILE.release.json, the manifest naming both signed with the release key.
 */
export type ReleaseArtifact = {
  readonly executable: string;
  readonly manifestPath: string;
  readonly transferPath: string;
  readonly bytes: number;
  readonly transferBytes: number;
  readonly seconds: number;
};

/**
 * Brotli's quality for a release, 6 of 11: on the x64 mesh-host (121.8 MiB) it made 34.4 MiB in
 * 4.8 s, where 9 made 33.2 MiB in 78.9 s.
 */
export const defaultBrotliQuality = 6;

/** The private half of a release key as PEM, checked to be Ed25519 (its text is never printed). */
export function releaseSigningKey(pem: string): string | Error {
  try {
    const key = createPrivateKey(pem);
    if (key.asymmetricKeyType !== 'ed25519')
      return new Error(`the signing key is ${key.asymmetricKeyType ?? 'of no known type'}, not Ed25519`);
    return pem;
  } catch {
    return new Error('the signing key is not a private key in PEM (openssl genpkey -algorithm ed25519)');
  }
}

/**
 * Compresses EXECUTABLE beside itself, then writes its manifest signed with the key. With
 * `compress: false` the manifest names no transfer, and hosts download the executable itself:
 * what agents from before compressed releases take (their manifest schema has no `transfer`).
 */
export async function writeRelease(
  executable: BuiltExecutable,
  info: { readonly version: string; readonly build: string },
  signingKeyPem: string,
  options: { readonly compress?: boolean; readonly quality?: number } = {},
): Promise<ReleaseArtifact> {
  const started = performance.now();
  const base = { version: info.version, build: info.build, arch: executable.target.arch } as const;
  const manifestPath = manifestFileOf(executable.path);
  if (options.compress === false) {
    const manifest: ReleaseManifest = { ...base, sha256: executable.sha256, bytes: executable.bytes };
    await writeFile(manifestPath, `${JSON.stringify(signRelease(manifest, signingKeyPem), null, 2)}\n`, {
      mode: 0o644,
    });
    return {
      executable: executable.name,
      manifestPath,
      transferPath: executable.path,
      bytes: executable.bytes,
      transferBytes: executable.bytes,
      seconds: (performance.now() - started) / 1000,
    };
  }
  const quality = options.quality ?? defaultBrotliQuality;
  const transferPath = transferFileOf(executable.path, 'br');
  const hash = createHash('sha256');
  let transferBytes = 0;
  await pipeline(
    createReadStream(executable.path),
    createBrotliCompress({
      params: {
        [constants.BROTLI_PARAM_QUALITY]: quality,
        [constants.BROTLI_PARAM_LGWIN]: constants.BROTLI_MAX_WINDOW_BITS,
        [constants.BROTLI_PARAM_SIZE_HINT]: executable.bytes,
      },
    }),
    async function* counted(chunks: AsyncIterable<Buffer>) {
      for await (const chunk of chunks) {
        transferBytes += chunk.length;
        hash.update(chunk);
        yield chunk;
      }
    },
    createWriteStream(transferPath, { mode: 0o644 }),
  );
  const manifest: ReleaseManifest = {
    ...base,
    sha256: executable.sha256,
    bytes: executable.bytes,
    transfer: { encoding: 'br', sha256: hash.digest('hex'), bytes: transferBytes },
  };
  await writeFile(manifestPath, `${JSON.stringify(signRelease(manifest, signingKeyPem), null, 2)}\n`, {
    mode: 0o644,
  });
  return {
    executable: executable.name,
    manifestPath,
    transferPath,
    bytes: executable.bytes,
    transferBytes,
    seconds: (performance.now() - started) / 1000,
  };
}
