import { createHash, randomInt } from 'node:crypto';
import * as z from 'zod';

/**
 * Token form `mesh_<id>_<secret>`: a 12-character id and a 43-character secret, both
 * alphanumeric (62 letters), so the secret carries 43 × log2(62) ≈ 256 bits. The fixed prefix
 * and shape let secret scanners find a token pasted where it should not be.
 */
const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const idLength = 12;
const secretLength = 43;
export const tokenPattern = /^mesh_([A-Za-z0-9]{12})_([A-Za-z0-9]{43})$/;

export const tokenString = z
  .string()
  .regex(tokenPattern, 'a token is mesh_<12 letters or digits>_<43 letters or digits>');

export type ParsedToken = { readonly tokenId: string; readonly secretHash: string };

export function newToken(): { token: string; tokenId: string; secretHash: string } {
  const tokenId = randomString(idLength);
  const secret = randomString(secretLength);
  return { token: `mesh_${tokenId}_${secret}`, tokenId, secretHash: hashSecret(secret) };
}

/** The id and the secret's hash; the secret itself goes no further than this function. */
export function parseToken(token: string): ParsedToken {
  const match = tokenPattern.exec(token);
  if (!match) throw new Error('not a Mesh token');
  return { tokenId: match[1] as string, secretHash: hashSecret(match[2] as string) };
}

/** Plain SHA-256 suffices: the secret is 256 random bits, not a password to be guessed. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('base64url');
}

function randomString(length: number): string {
  let out = '';
  for (let index = 0; index < length; index += 1) out += alphabet[randomInt(alphabet.length)];
  return out;
}

/** `--ttl`: a number and a unit (s, m, h, d); at least a minute, at most 30 days. */
export const tokenTtl = z
  .string()
  .regex(/^[1-9][0-9]{0,6}[smhd]$/, 'a ttl is a number and a unit: 90s, 15m, 24h, 7d')
  .transform((text) => Number(text.slice(0, -1)) * unitSeconds[text.slice(-1) as keyof typeof unitSeconds])
  .pipe(
    z
      .number()
      .min(60, 'a ttl is at least 1 minute')
      .max(30 * 86_400, 'a ttl is at most 30 days'),
  );
const unitSeconds = { s: 1, m: 60, h: 3600, d: 86_400 } as const;
export const defaultTokenTtl = '24h';
