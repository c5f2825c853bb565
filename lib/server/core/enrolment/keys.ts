import { createHash } from 'node:crypto';
import { calculateJwkThumbprint, type JWK } from 'jose';
import * as z from 'zod';

/**
 * The public keys a host presents to enrol:
 * - `signing`: Ed25519 (OKP), the node's identity; it signs every host request after enrolment
 * - `sealing`: X25519 (OKP): every provision's secret is sealed to it at the mint
 *   (docs/decisions/sealed-secrets.md)
 * Only the public members are accepted; a private member (`d`) is refused, never stored.
 */
const okp = (crv: 'Ed25519' | 'X25519') =>
  z
    .object({
      kty: z.literal('OKP'),
      crv: z.literal(crv),
      x: z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'x is a base64url 32-byte public key'),
    })
    .strict();

export const publicKeys = z.object({ signing: okp('Ed25519'), sealing: okp('X25519') }).strict();
export type PresentedKeys = z.infer<typeof publicKeys>;

export type PresenterIdentity = {
  /** RFC 7638 thumbprint of the signing key: the node's key id. */
  readonly thumbprint: string;
  /** Both keys' thumbprints hashed together: "the same presenter" means the same two keys. */
  readonly presenter: string;
};

export async function presenterOf(keys: PresentedKeys): Promise<PresenterIdentity> {
  const thumbprint = await calculateJwkThumbprint(keys.signing as JWK, 'sha256');
  const sealing = await calculateJwkThumbprint(keys.sealing as JWK, 'sha256');
  const presenter = createHash('sha256').update(`${thumbprint}.${sealing}`).digest('base64url');
  return { thumbprint, presenter };
}
