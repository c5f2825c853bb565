import { createHmac, randomBytes } from 'node:crypto';
import { base64url, SignJWT } from 'jose';
import { generateNodeKeys, type NodeKeys } from '../../../lib/clients/host/keys.ts';
import { hostProof } from '../../../lib/clients/host/proof.ts';
import {
  bodyHash,
  proofScheme,
  proofType,
  requestTarget,
} from '../../../lib/server/core/host-identity/proof.ts';

/**
 * How a host request is signed: `valid` as the node's host does, or forged one way. Every
 * forgery must be refused (401) and write nothing. `other-node` is signed by the node's own key
 * naming another node; `foreign-key`, `injected-jwk` and `jku-header` by an attacker's key under
 * the node's kid (the last two also say where the attacker's key is); `unenrolled-key` by a key
 * that was never enrolled, under its own kid.
 */
export const forgeries = [
  'missing',
  'wrong-scheme',
  'garbage',
  'huge',
  'alg-none',
  'hmac-with-public-key',
  'injected-jwk',
  'jku-header',
  'wrong-typ',
  'es256-claimed',
  'unenrolled-key',
  'foreign-key',
  'other-node',
  'stale',
  'from-the-future',
  'other-method',
  'other-url',
  'other-body',
  'short-jti',
] as const;
export type Forgery = (typeof forgeries)[number];

export type SignedRequest = { readonly method: string; readonly path: string; readonly body: string };
export type Signer = { readonly node: string; readonly keys: NodeKeys; readonly otherNode: string };

const target = (path: string) => {
  const url = new URL(path, 'http://fuzz.invalid');
  return requestTarget(url.pathname, url.searchParams);
};

/** The Authorization header of a request signed as the node's host would sign it. */
export const validProof = (signer: Signer, request: SignedRequest): Promise<string> =>
  hostProof(
    { node: signer.node, privateKey: signer.keys.signing.privateKey, thumbprint: signer.keys.thumbprint },
    { method: request.method, url: `http://fuzz.invalid${request.path}`, body: request.body },
  );

/** The Authorization header (or none) of a forged proof for this request. */
export async function forgedProof(
  forgery: Forgery,
  signer: Signer,
  request: SignedRequest,
): Promise<string | undefined> {
  const now = Math.floor(Date.now() / 1000);
  const claims = {
    sub: signer.node,
    htm: request.method,
    htu: target(request.path),
    bh: bodyHash(request.body),
    iat: now,
    jti: randomBytes(18).toString('base64url'),
  };
  const header = { alg: 'EdDSA', typ: proofType, kid: signer.keys.thumbprint };
  const sign = async (
    changes: { header?: Record<string, unknown>; claims?: Record<string, unknown> },
    keys: NodeKeys = signer.keys,
  ) => {
    const jws = await new SignJWT({ ...claims, ...changes.claims })
      .setProtectedHeader({ ...header, ...changes.header } as { alg: string })
      .sign(keys.signing.privateKey);
    return `${proofScheme} ${jws}`;
  };
  const encoded = (value: unknown) => base64url.encode(JSON.stringify(value));
  switch (forgery) {
    case 'missing':
      return undefined;
    case 'wrong-scheme':
      return (await sign({})).replace(proofScheme, 'Bearer');
    case 'garbage':
      return `${proofScheme} ${randomBytes(30).toString('base64url')}.${randomBytes(30).toString('base64url')}.x`;
    case 'huge':
      return `${proofScheme} ${'A'.repeat(8_000)}.${'B'.repeat(8_000)}.${'C'.repeat(100)}`;
    case 'alg-none':
      return `${proofScheme} ${encoded({ ...header, alg: 'none' })}.${encoded(claims)}.`;
    case 'hmac-with-public-key': {
      const signingInput = `${encoded({ ...header, alg: 'HS256' })}.${encoded(claims)}`;
      const secret = JSON.stringify(signer.keys.signing.publicJwk);
      return `${proofScheme} ${signingInput}.${createHmac('sha256', secret).update(signingInput).digest('base64url')}`;
    }
    case 'injected-jwk': {
      const { keys: attacker } = await generateNodeKeys();
      return sign({ header: { jwk: attacker.signing.publicJwk } }, attacker);
    }
    case 'jku-header': {
      const { keys: attacker } = await generateNodeKeys();
      return sign({ header: { jku: 'http://127.0.0.1:1/keys.json' } }, attacker);
    }
    case 'wrong-typ':
      return sign({ header: { typ: 'JWT' } });
    case 'es256-claimed':
      return `${proofScheme} ${encoded({ ...header, alg: 'ES256' })}.${encoded(claims)}.${randomBytes(64).toString('base64url')}`;
    case 'unenrolled-key': {
      const { keys: stranger } = await generateNodeKeys();
      return sign({ header: { kid: stranger.thumbprint } }, stranger);
    }
    case 'foreign-key': {
      const { keys: stranger } = await generateNodeKeys();
      return sign({}, stranger);
    }
    case 'other-node':
      return sign({ claims: { sub: signer.otherNode } });
    case 'stale':
      return sign({ claims: { iat: now - 600 } });
    case 'from-the-future':
      return sign({ claims: { iat: now + 600 } });
    case 'other-method':
      return sign({ claims: { htm: request.method === 'GET' ? 'POST' : 'GET' } });
    case 'other-url':
      return sign({ claims: { htu: `${target(request.path)}x` } });
    case 'other-body':
      return sign({ claims: { bh: bodyHash(`${request.body} `) } });
    case 'short-jti':
      return sign({ claims: { jti: 'short' } });
  }
}

/** The jti a proof carries, read without verifying it: which replay-guard item it may write. */
export function proofJti(authorization: string | undefined): string | undefined {
  const payload = authorization?.split(' ')[1]?.split('.')[1];
  if (!payload) return undefined;
  try {
    return (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { jti?: string }).jti;
  } catch {
    return undefined;
  }
}
