import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type CryptoKey,
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  importJWK,
  type JWK,
} from 'jose';
import * as z from 'zod';
import type { HostSigningKey } from './proof.ts';

/**
 * The node's keys, generated on the host and never sent anywhere but their public halves:
 * - signing: Ed25519, proves every host request (and is the node's identity, by thumbprint)
 * - sealing: X25519: the control plane seals each provision's secret to it; the agent opens them
 *
 * Kept in DIR (mode 0700) as `signing.jwk` and `sealing.jwk` (mode 0600, private JWKs).
 */
export type NodeKeys = {
  readonly signing: { readonly privateKey: CryptoKey; readonly publicJwk: JWK };
  readonly sealing: { readonly privateKey: CryptoKey; readonly publicJwk: JWK };
  readonly thumbprint: string;
};

export const defaultHostDir = '/var/lib/mesh-host';
export const signingFile = 'signing.jwk';
export const sealingFile = 'sealing.jwk';

export async function generateNodeKeys(): Promise<{
  keys: NodeKeys;
  privateJwks: { signing: JWK; sealing: JWK };
}> {
  const signing = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
  const sealing = await generateKeyPair('ECDH-ES', { crv: 'X25519', extractable: true });
  const privateJwks = {
    signing: await exportJWK(signing.privateKey),
    sealing: await exportJWK(sealing.privateKey),
  };
  return { keys: await keysFrom(privateJwks.signing, privateJwks.sealing), privateJwks };
}

/** The key files in DIR are there but are not keys (cut short, edited): they are never overwritten. */
export class NodeKeysUnreadableError extends Error {
  override name = 'NodeKeysUnreadableError';
  readonly dir: string;
  constructor(dir: string, options: { cause?: unknown } = {}) {
    super(
      `the node keys in ${dir} cannot be read; move ${signingFile} and ${sealingFile} away to enrol with new keys`,
      options,
    );
    this.dir = dir;
  }
}

/** A private key file as writePrivate() leaves it. */
const privateOkp = (crv: 'Ed25519' | 'X25519') =>
  z.object({ kty: z.literal('OKP'), crv: z.literal(crv), x: z.string().min(1), d: z.string().min(1) });

/** Loads the keys kept in DIR, or undefined when there are none yet, or none that can be read. */
export async function loadNodeKeys(dir: string): Promise<NodeKeys | undefined> {
  try {
    return await readNodeKeys(dir);
  } catch (error) {
    if (error instanceof NodeKeysUnreadableError) return undefined;
    throw error;
  }
}

/** The keys in DIR; undefined when a file is missing; NodeKeysUnreadableError when they are not keys. */
async function readNodeKeys(dir: string): Promise<NodeKeys | undefined> {
  let signingText: string;
  let sealingText: string;
  try {
    signingText = await readFile(join(dir, signingFile), 'utf8');
    sealingText = await readFile(join(dir, sealingFile), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    const signing = privateOkp('Ed25519').parse(JSON.parse(signingText));
    const sealing = privateOkp('X25519').parse(JSON.parse(sealingText));
    return await keysFrom(signing as JWK, sealing as JWK);
  } catch (cause) {
    throw new NodeKeysUnreadableError(dir, { cause });
  }
}

/**
 * The keys of this enrolment: those already in DIR (an earlier run whose answer was lost, or
 * that was told to wait, presents the same keys and so can still be the token's presenter),
 * else new ones written there first, owner-only, before anything is sent. Key files that
 * cannot be read throw NodeKeysUnreadableError rather than being replaced.
 */
export async function loadOrCreateNodeKeys(dir: string): Promise<{ keys: NodeKeys; created: boolean }> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  const existing = await readNodeKeys(dir);
  if (existing) return { keys: existing, created: false };
  const { keys, privateJwks } = await generateNodeKeys();
  await writePrivate(join(dir, signingFile), privateJwks.signing);
  await writePrivate(join(dir, sealingFile), privateJwks.sealing);
  return { keys, created: true };
}

export function signingKeyOf(node: string, keys: NodeKeys): HostSigningKey {
  return { node, privateKey: keys.signing.privateKey, thumbprint: keys.thumbprint };
}

async function writePrivate(path: string, jwk: JWK) {
  // Written under a temporary name with the final mode, then renamed: never readable by others.
  const temporary = `${path}.tmp-${process.pid}`;
  await writeFile(temporary, `${JSON.stringify(jwk)}\n`, { mode: 0o600, flag: 'w' });
  await chmod(temporary, 0o600);
  await rename(temporary, path);
}

async function keysFrom(signingJwk: JWK, sealingJwk: JWK): Promise<NodeKeys> {
  const publicOf = (jwk: JWK): JWK => ({ kty: jwk.kty, crv: jwk.crv, x: jwk.x }) as JWK;
  const signingPublic = publicOf(signingJwk);
  const sealingPublic = publicOf(sealingJwk);
  return {
    signing: { privateKey: (await importJWK(signingJwk, 'EdDSA')) as CryptoKey, publicJwk: signingPublic },
    sealing: { privateKey: (await importJWK(sealingJwk, 'ECDH-ES')) as CryptoKey, publicJwk: sealingPublic },
    thumbprint: await calculateJwkThumbprint(signingPublic, 'sha256'),
  };
}
