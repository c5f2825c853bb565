import { decodeJwt, decodeProtectedHeader, importJWK, jwtVerify } from 'jose';
import {
  NodeNotEnrolledError,
  ProofInvalidError,
  ProofMismatchError,
  ProofMissingError,
  ProofReplayedError,
  ProofStaleError,
  WrongNodeError,
} from './errors.ts';
import { type NodeCredentialReader, namesEnrolledKey, type ProofReplayGuard } from './ports.ts';
import {
  bodyHash,
  defaultMaxSkewSeconds,
  keyThumbprint,
  type ProofClaims,
  proofAlgorithm,
  proofClaims,
  proofScheme,
  proofType,
} from './proof.ts';

/** The request as the verifier needs it; an API Gateway REQUEST authorizer can fill it too. */
export type ProvenRequest = {
  /** The `Authorization` header value. */
  readonly authorization: string | undefined;
  readonly method: string;
  /** `requestTarget(path, query)` of the request as received. */
  readonly target: string;
  /** The raw body bytes; omit (undefined) to skip the body check, as an authorizer must. */
  readonly body?: Uint8Array | string | null;
  /** The node the route is about (`{node}`), if any. */
  readonly routeNode?: string;
};

export type VerifyOptions = {
  readonly credentials: NodeCredentialReader;
  /** Omit to skip replay protection (an authorizer in front of a handler that checks it). */
  readonly replayGuard?: ProofReplayGuard;
  readonly now?: () => Date;
  readonly maxSkewSeconds?: number;
};

export type VerifiedHost = { readonly node: string; readonly thumbprint: string; readonly jti: string };

/**
 * Decides whether a request comes from the node it names. Cheap checks (form, time, method,
 * target, body) run before the one store read; the signature is checked against the key the
 * node's completed enrolment names, so keys stored by an attempt that never spent its token
 * are never a credential. A node acting on another node's route is refused after its own proof
 * verified, so a 403 never answers an unproven caller.
 */
export async function verifyHostProof(request: ProvenRequest, options: VerifyOptions): Promise<VerifiedHost> {
  const now = options.now?.() ?? new Date();
  const maxSkew = options.maxSkewSeconds ?? defaultMaxSkewSeconds;

  const jws = proofFrom(request.authorization);
  const { kid, claims } = readUnverified(jws);
  const nowSeconds = Math.floor(now.getTime() / 1000);
  if (Math.abs(nowSeconds - claims.iat) > maxSkew) {
    throw new ProofStaleError('proof_stale', `the proof was made ${nowSeconds - claims.iat} s from now`);
  }
  if (claims.htm !== request.method.toUpperCase() || claims.htu !== request.target) {
    throw new ProofMismatchError('proof_mismatch', 'the proof signs another method or URL');
  }
  if (request.body !== undefined && claims.bh !== bodyHash(request.body)) {
    throw new ProofMismatchError('proof_mismatch', 'the proof signs another body');
  }

  const credential = await options.credentials.readCredential(claims.sub, kid);
  if (!credential.key || !namesEnrolledKey(credential, kid)) {
    throw new NodeNotEnrolledError(
      'not_enrolled',
      `node ${claims.sub} has no completed enrolment for this key`,
    );
  }
  try {
    const key = await importJWK(credential.key.signingKey, proofAlgorithm);
    await jwtVerify(jws, key, {
      algorithms: [proofAlgorithm],
      typ: proofType,
      subject: claims.sub,
      currentDate: now,
      clockTolerance: maxSkew,
    });
  } catch (error) {
    throw new ProofInvalidError('proof_invalid', 'the proof does not verify against the node key', {
      cause: error,
    });
  }

  if (request.routeNode !== undefined && request.routeNode !== claims.sub) {
    throw new WrongNodeError(claims.sub, request.routeNode);
  }
  if (options.replayGuard) {
    const fresh = await options.replayGuard.rememberOnce(claims.sub, claims.jti, claims.iat + 2 * maxSkew);
    if (!fresh) throw new ProofReplayedError('proof_replayed', 'this proof was already used');
  }
  return { node: claims.sub, thumbprint: kid, jti: claims.jti };
}

function proofFrom(authorization: string | undefined): string {
  const match = /^(\S+)\s+(\S+)$/.exec(authorization?.trim() ?? '');
  if (!match || match[1]?.toLowerCase() !== proofScheme.toLowerCase()) {
    throw new ProofMissingError('proof_missing', `send Authorization: ${proofScheme} <proof>`);
  }
  return match[2] as string;
}

function readUnverified(jws: string): { kid: string; claims: ProofClaims } {
  try {
    const header = decodeProtectedHeader(jws);
    const kid = keyThumbprint.parse(header.kid);
    if (header.alg !== proofAlgorithm || header.typ !== proofType) throw new Error('unexpected header');
    return { kid, claims: proofClaims.parse(decodeJwt(jws)) };
  } catch (error) {
    throw new ProofMissingError('proof_malformed', 'the proof is not a Mesh proof-of-possession JWS', {
      cause: error,
    });
  }
}
