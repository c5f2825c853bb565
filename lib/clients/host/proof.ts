import { randomBytes } from 'node:crypto';
import { type CryptoKey, type KeyObject, SignJWT } from 'jose';
import {
  bodyHash,
  proofAlgorithm,
  proofScheme,
  proofType,
  requestTarget,
} from '../../server/core/host-identity/proof.ts';
import { connectMethod, connectTarget } from '../../server/core/signal/connect.ts';
import type { RequestSigner } from '../http/api-client.ts';

/** What a host signs with: its node name and enrolled Ed25519 private key. */
export type HostSigningKey = {
  readonly node: string;
  readonly privateKey: CryptoKey | KeyObject;
  /** RFC 7638 thumbprint of the public key, sent as `kid`. */
  readonly thumbprint: string;
};

export type HostRequestParts = {
  readonly method: string;
  /** Absolute URL as the host requests it, stage prefix included. */
  readonly url: string;
  readonly body?: Uint8Array | string | null;
};

export type ProofOptions = { readonly now?: () => Date; readonly jti?: string };

/** The `Authorization` header value proving this request comes from the node holding the key. */
export async function hostProof(
  key: HostSigningKey,
  request: HostRequestParts,
  options: ProofOptions = {},
): Promise<string> {
  const url = new URL(request.url);
  const jws = await signProof(
    key,
    {
      htm: request.method.toUpperCase(),
      htu: requestTarget(url.pathname, url.searchParams),
      bh: bodyHash(request.body),
    },
    options,
  );
  return `${proofScheme} ${jws}`;
}

/** The MQTT password of one broker connect: a fresh proof for `CONNECT` on the node's signal (lib/server/core/signal/connect.ts). */
export function connectPassword(key: HostSigningKey, options: ProofOptions = {}): Promise<string> {
  return signProof(key, { htm: connectMethod, htu: connectTarget(key.node), bh: bodyHash('') }, options);
}

function signProof(
  key: HostSigningKey,
  claims: { readonly htm: string; readonly htu: string; readonly bh: string },
  options: ProofOptions,
): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: proofAlgorithm, typ: proofType, kid: key.thumbprint })
    .setSubject(key.node)
    .setIssuedAt(Math.floor((options.now?.() ?? new Date()).getTime() / 1000))
    .setJti(options.jti ?? randomBytes(18).toString('base64url'))
    .sign(key.privateKey);
}

/** Gives each request the node's proof as its `Authorization`: an ApiClient's signer on a node. */
export function hostRequestSigner(key: HostSigningKey, options: ProofOptions = {}): RequestSigner {
  return async (request) => ({
    ...request.headers,
    authorization: await hostProof(
      key,
      { method: request.method, url: request.url.href, body: request.body ?? '' },
      options,
    ),
  });
}
