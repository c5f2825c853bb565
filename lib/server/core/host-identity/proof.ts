import { createHash } from 'node:crypto';
import * as z from 'zod';
import { compareText as compare } from '../canonical.ts';
import { nodeName } from '../names.ts';

/**
 * The proof-of-possession a host puts on every request after enrolment, in the spirit of
 * RFC 9449 (DPoP): a compact EdDSA JWS made with the node's enrolled Ed25519 key, carried as
 * `Authorization: MeshPoP <jws>`.
 *
 * Protected header: `alg: EdDSA`, `typ: mesh-pop+jwt`, `kid`: the RFC 7638 thumbprint of the
 * node's signing key (so the verifier reads exactly one key).
 *
 * Claims:
 * - `sub` the node the host speaks for
 * - `htm` the HTTP method
 * - `htu` the request target: the path the host requested plus its query, canonical (see
 *   `requestTarget`). The path includes any API Gateway stage prefix (`/prod/hosts/…`) because
 *   that is what the host requested; the verifier reads it from `requestContext.path`, which
 *   API Gateway fills with the path as requested, and falls back to `event.path`. Scheme and
 *   host are not bound: behind custom domains they differ from what the function sees, and the
 *   node key already ties a proof to one deployment's identity table.
 * - `iat` seconds since the epoch, accepted within ±`maxSkewSeconds`
 * - `jti` unique per request (replay protection, remembered for twice the skew)
 * - `bh` base64url SHA-256 of the exact body bytes (of the empty string when there is none)
 */
export const proofScheme = 'MeshPoP';
export const proofType = 'mesh-pop+jwt';
export const proofAlgorithm = 'EdDSA';
export const defaultMaxSkewSeconds = 60;

export const proofClaims = z.object({
  sub: nodeName,
  htm: z.string().regex(/^[A-Z]{3,7}$/),
  htu: z.string().startsWith('/').max(2048),
  iat: z.number().int().nonnegative(),
  jti: z.string().regex(/^[A-Za-z0-9_-]{16,64}$/, 'jti is 16 to 64 base64url characters'),
  bh: z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'bh is a base64url SHA-256'),
});
export type ProofClaims = z.infer<typeof proofClaims>;

/** A JWK thumbprint (RFC 7638, SHA-256, base64url). */
export const keyThumbprint = z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'a key thumbprint');

export function bodyHash(body: Uint8Array | string | null | undefined): string {
  return createHash('sha256')
    .update(body ?? '')
    .digest('base64url');
}

/**
 * The canonical request target both sides compute: path as requested, then the query with its
 * pairs sorted by name then value and form-encoded, so neither side depends on how the other
 * (or API Gateway) ordered or escaped them.
 */
export function requestTarget(path: string, query: Iterable<readonly [string, string]> = []): string {
  const pairs = [...query].sort(([a, x], [b, y]) => (a === b ? compare(x, y) : compare(a, b)));
  if (pairs.length === 0) return path;
  return `${path}?${new URLSearchParams(pairs.map(([name, value]): [string, string] => [name, value])).toString()}`;
}
