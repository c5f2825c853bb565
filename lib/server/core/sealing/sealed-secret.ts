import { createHash, createHmac } from 'node:crypto';
import { Aes256Gcm, CipherSuite, DhkemX25519HkdfSha256, HkdfSha256 } from '@hpke/core';
import type { CryptoKey, JWK } from 'jose';
import { SealedSecretRefusedError } from './errors.ts';

/**
 * A provision's secret sealed to one node's enrolled X25519 sealing key
 * (docs/decisions/sealed-secrets.md): HPKE (RFC 9180) in base mode, DHKEM(X25519, HKDF-SHA256),
 * HKDF-SHA256, AES-256-GCM, with where the copy belongs (node, side, relation, generation) as the
 * AEAD's additional data. The binding is not carried, it is restated by the opener from where it
 * found the copy, so a copy moved whole to another node, relation or generation opens to nothing.
 * `hpke1.<tag>.<enc>.<ciphertext>`: the tag (a hash of the binding) only lets the opener say
 * which of "bound elsewhere" and "not sealed to this key" refused it.
 */
export type SealedSecret = string;

export type SealBinding = {
  /** The node whose sealing key the copy is sealed to. */
  readonly node: string;
  /** Which end of the relation that node is. */
  readonly side: 'consumer' | 'provider';
  /** The relation, `consumerNode/consumerModule->providerNode/providerModule`. */
  readonly relation: string;
  /** The mint it came from: a secret minted again (rotation, a new key) is a new generation. */
  readonly generation: string;
};

const format = 'hpke1';
const info = new TextEncoder().encode('mesh sealed secret v1');
const suite = new CipherSuite({
  kem: new DhkemX25519HkdfSha256(),
  kdf: new HkdfSha256(),
  aead: new Aes256Gcm(),
});

export const relationOf = (relation: {
  readonly consumerNode: string;
  readonly consumerModule: string;
  readonly providerNode: string;
  readonly providerModule: string;
}): string =>
  `${relation.consumerNode}/${relation.consumerModule}->${relation.providerNode}/${relation.providerModule}`;

/** Seals `secret` to the node's public sealing key (an X25519 JWK, as enrolled). */
export async function sealSecret(
  secret: string,
  sealingKey: JWK,
  binding: SealBinding,
): Promise<SealedSecret> {
  const recipientPublicKey = await suite.kem.importKey(
    'jwk',
    { kty: 'OKP', crv: 'X25519', x: sealingKey.x },
    true,
  );
  const sender = await suite.createSenderContext({ recipientPublicKey, info });
  const ciphertext = await sender.seal(new TextEncoder().encode(secret), additionalData(binding));
  return [format, tagOf(binding), base64url(sender.enc), base64url(ciphertext)].join('.');
}

/**
 * Opens a sealed copy with the node's private sealing key, only where it belongs: a copy bound
 * elsewhere, or not sealed to this key, is refused with the reason (never the secret).
 */
export async function openSealed(
  sealed: SealedSecret,
  privateKey: CryptoKey,
  expected: SealBinding,
): Promise<string> {
  const [form, tag, enc, ciphertext, ...more] = sealed.split('.');
  if (form !== format || !tag || !enc || !ciphertext || more.length > 0)
    throw new SealedSecretRefusedError(
      `the sealed copy for ${describe(expected)} is not a sealed secret (${format})`,
    );
  if (tag !== tagOf(expected))
    throw new SealedSecretRefusedError(
      `the sealed copy found as ${describe(expected)} was sealed for another node, side, relation or generation`,
    );
  try {
    const recipient = await suite.createRecipientContext({
      recipientKey: privateKey,
      enc: Buffer.from(enc, 'base64url'),
      info,
    });
    const plaintext = await recipient.open(Buffer.from(ciphertext, 'base64url'), additionalData(expected));
    return new TextDecoder().decode(plaintext);
  } catch (cause) {
    throw new SealedSecretRefusedError(
      `the sealed copy for ${describe(expected)} does not open with this node's sealing key`,
      { cause },
    );
  }
}

/**
 * What an operator sees in place of a secret: the first 12 base64url characters of its HMAC-SHA256
 * under the control plane's fingerprint key, so two secrets can be told apart and one matched
 * against a host's, while the fingerprint alone cannot be tried against guesses without the key.
 */
export function fingerprintOf(secret: string, fingerprintKey: Uint8Array): string {
  return `hmac-sha256:${createHmac('sha256', fingerprintKey).update(secret).digest('base64url').slice(0, 12)}`;
}

const additionalData = (binding: SealBinding): Uint8Array =>
  new TextEncoder().encode(
    JSON.stringify([binding.node, binding.side, binding.relation, binding.generation]),
  );

const tagOf = (binding: SealBinding): string =>
  createHash('sha256').update(additionalData(binding)).digest('base64url').slice(0, 8);

const base64url = (bytes: ArrayBuffer): string => Buffer.from(bytes).toString('base64url');

const describe = (binding: SealBinding): string =>
  `the ${binding.side} ${binding.node} of ${binding.relation} (generation ${binding.generation})`;

/**
 * A node's enrolled sealing key with its id: a hash of the public key, which each minted
 * provision records for both its sides, so a key that changed since (a rotation, a new
 * enrolment) makes the provision stale and its consumer's next compose mints it again.
 */
export function sealingKeyOf(jwk: {
  readonly x?: unknown;
}): { id: string; jwk: { kty: 'OKP'; crv: 'X25519'; x: string } } | undefined {
  if (typeof jwk.x !== 'string' || jwk.x.length === 0) return undefined;
  return {
    id: createHash('sha256').update(`X25519.${jwk.x}`).digest('base64url').slice(0, 16),
    jwk: { kty: 'OKP', crv: 'X25519', x: jwk.x },
  };
}
