import { createHash, createPublicKey, generateKeyPairSync, type KeyObject, sign, verify } from 'node:crypto';
import * as z from 'zod';
import { canonicalJson } from '../canonical.ts';
import { labelValue } from '../mesh/labels.ts';

/**
 * A release of `mesh-host`: the executable and a manifest signed with a release key (Ed25519).
 * A host verifies the signature against the keys it trusts (built into it, docs/host-agent.md
 * "Releases"), then the executable's size and SHA-256 against the manifest, before it replaces
 * anything. A manifest that names `releaseKeys` rotates the keys: signed by a key the host trusts,
 * those keys are the ones it trusts from then on (so the old key signs the release that retires it).
 */

/** A public release key: the base64 of its SPKI DER (44 bytes for Ed25519). */
export const releaseKeyText = z
  .string()
  .regex(/^[A-Za-z0-9+/]{58,62}={0,2}$/, 'an Ed25519 public key, base64 SPKI');

export const releaseArches = ['x64', 'arm64'] as const;

const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/);
/** A file's size: at most 512 MiB. */
const fileBytes = z
  .number()
  .int()
  .min(1)
  .max(512 * 1024 * 1024);

export const releaseManifest = z.strictObject({
  /** As `mesh-host --version` prints it, and a selector matches it (`--on agent=…`). */
  version: labelValue,
  build: z.string().min(1).max(64).optional(),
  arch: z.enum(releaseArches),
  sha256: sha256Hex,
  /** The executable's size. */
  bytes: fileBytes,
  /** The keys the host trusts from this release on, in place of those it trusted (1 to 4). */
  releaseKeys: z.array(releaseKeyText).min(1).max(4).optional(),
  /**
   * What is kept and fetched, when not the executable itself: the executable compressed with
   * Brotli (Node's own zlib, so the agent needs nothing more to read it), its size and SHA-256.
   * A host checks both: the download as it comes, the executable as it is decompressed.
   */
  transfer: z.strictObject({ encoding: z.literal('br'), sha256: sha256Hex, bytes: fileBytes }).optional(),
});
export type ReleaseManifest = z.infer<typeof releaseManifest>;

/** The file a release store keeps, and a host downloads: the compressed executable when the manifest names one. */
export type TransferFile = { readonly sha256: string; readonly bytes: number; readonly encoding?: 'br' };

export const transferOf = (manifest: ReleaseManifest): TransferFile =>
  manifest.transfer ?? { sha256: manifest.sha256, bytes: manifest.bytes };

/** Where a release's signed manifest is kept beside its executable: what `mesh agent publish FILE` reads. */
export const manifestFileOf = (file: string) => `${file}.release.json`;
/** Where a compressed release keeps what is uploaded beside its executable (its manifest's `transfer`). */
export const transferFileOf = (file: string, encoding: 'br') => `${file}.${encoding}`;

export const signedRelease = z.strictObject({
  manifest: releaseManifest,
  /** Ed25519 over the manifest's canonical JSON, base64. */
  signature: z.string().regex(/^[A-Za-z0-9+/]{86}={0,2}$/, 'an Ed25519 signature, base64'),
});
export type SignedRelease = z.infer<typeof signedRelease>;

/** Why a release is refused; the host reports it and replaces nothing. */
export type ReleaseRefusal = 'bad-signature' | 'wrong-arch' | 'wrong-size' | 'wrong-digest';

export type ReleaseVerdict =
  | { readonly ok: true; readonly trusted: readonly string[] }
  | { readonly ok: false; readonly refusal: ReleaseRefusal; readonly reason: string };

const signedBytes = (manifest: ReleaseManifest) => Buffer.from(canonicalJson(manifest), 'utf8');

const publicKeyOf = (text: string): KeyObject | undefined => {
  try {
    const key = createPublicKey({ key: Buffer.from(text, 'base64'), format: 'der', type: 'spki' });
    return key.asymmetricKeyType === 'ed25519' ? key : undefined;
  } catch {
    return undefined;
  }
};

/** Signs a manifest with a release key's private half (PEM, PKCS#8): what `mesh agent publish` sends. */
export function signRelease(manifest: ReleaseManifest, privateKeyPem: string): SignedRelease {
  const signature = sign(null, signedBytes(manifest), privateKeyPem).toString('base64');
  return { manifest, signature };
}

/** Whether any trusted key signed the manifest; every other check waits on this one. */
export function signedByTrusted(release: SignedRelease, trusted: readonly string[]): boolean {
  const signature = Buffer.from(release.signature, 'base64');
  return trusted.some((text) => {
    const key = publicKeyOf(text);
    return key !== undefined && verify(null, signedBytes(release.manifest), key, signature);
  });
}

/**
 * The whole check a host makes before it replaces anything: a trusted key's signature, its
 * architecture, the executable's size and digest. When it holds, the keys it trusts next.
 */
export function verifyRelease(
  release: SignedRelease,
  executable: Buffer,
  host: { readonly trusted: readonly string[]; readonly arch: string },
): ReleaseVerdict {
  const signed = verifyManifest(release, host);
  if (!signed.ok) return signed;
  const digest = createHash('sha256').update(executable).digest('hex');
  return verifyExecutable(release.manifest, executable.length, digest) ?? signed;
}

/**
 * The half of the check made before a byte of the executable is fetched: a trusted key's
 * signature and the host's architecture. When it holds, the keys the host trusts next.
 */
export function verifyManifest(
  release: SignedRelease,
  host: { readonly trusted: readonly string[]; readonly arch: string },
): ReleaseVerdict {
  const { manifest } = release;
  if (!signedByTrusted(release, host.trusted))
    return {
      ok: false,
      refusal: 'bad-signature',
      reason: `release ${manifest.version}: no key this host trusts signed it`,
    };
  if (manifest.arch !== host.arch)
    return {
      ok: false,
      refusal: 'wrong-arch',
      reason: `release ${manifest.version} is for ${manifest.arch}, this host is ${host.arch}`,
    };
  return { ok: true, trusted: manifest.releaseKeys ?? host.trusted };
}

/** The other half, on the executable's size and SHA-256 (hex) as they were counted: undefined when they are the manifest's. */
export const verifyExecutable = (manifest: ReleaseManifest, bytes: number, sha256: string) =>
  verifyCounted(manifest.version, 'executable', manifest, { bytes, sha256 });

/** The download's size and SHA-256 as counted: undefined when they are the transfer's the manifest names. */
export const verifyTransfer = (manifest: ReleaseManifest, bytes: number, sha256: string) =>
  verifyCounted(manifest.version, 'download', transferOf(manifest), { bytes, sha256 });

function verifyCounted(
  version: string,
  what: 'executable' | 'download',
  signed: { readonly bytes: number; readonly sha256: string },
  counted: { readonly bytes: number; readonly sha256: string },
): Extract<ReleaseVerdict, { ok: false }> | undefined {
  if (counted.bytes !== signed.bytes)
    return {
      ok: false,
      refusal: 'wrong-size',
      reason: `release ${version}: the ${what} is ${counted.bytes} bytes, the manifest says ${signed.bytes}`,
    };
  if (counted.sha256 !== signed.sha256)
    return {
      ok: false,
      refusal: 'wrong-digest',
      reason: `release ${version}: the ${what}'s SHA-256 is not the manifest's`,
    };
  return undefined;
}

/** The public half, as a host trusts it, of a release key's private half (PEM). */
export const publicKeyText = (privateKeyPem: string): string =>
  createPublicKey(privateKeyPem).export({ format: 'der', type: 'spki' }).toString('base64');

/** A new release key pair: the public half as a host trusts it, the private half in PEM. */
export function newReleaseKey(): { readonly publicKey: string; readonly privateKeyPem: string } {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  return {
    publicKey: publicKey.export({ format: 'der', type: 'spki' }).toString('base64'),
    privateKeyPem: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
  };
}
