import type { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from '@smithy/types';
import type { RequestSigner } from './api-client.ts';

/** API Gateway's service name in SigV4. */
const executeApiService = 'execute-api';

const executeApiHost = /^[a-z0-9]+\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?$/;

/** The region of an API Gateway URL (`https://<id>.execute-api.<region>.amazonaws.com/…`), else undefined. */
export function executeApiRegion(url: string): string | undefined {
  try {
    return executeApiHost.exec(new URL(url).hostname)?.[1];
  } catch {
    return undefined;
  }
}

export type SigV4SignerOptions = {
  readonly region: string;
  /** @default the standard AWS credential chain (env, SSO, shared files, process, web identity, IMDS/ECS) */
  readonly credentials?: AwsCredentialIdentity | AwsCredentialIdentityProvider;
  /** @default 'execute-api' */
  readonly service?: string;
  /** @default the current time */
  readonly now?: () => Date;
};

/**
 * Signs each request with SigV4, as API Gateway's IAM authorization expects: the method,
 * path, query, `host`, `x-amz-date`, every header the request carries and the body's hash.
 * Host is signed from the URL and left out of the headers it gives: both transports send it
 * from the same URL. `x-amz-content-sha256` is not added: execute-api does not ask for it.
 */
export function createSigV4Signer(options: SigV4SignerOptions): RequestSigner {
  let made: Promise<SignatureV4> | undefined;
  return async function signRequest(request) {
    made ??= makeSigner(options);
    const signer = await made;
    const { url } = request;
    const query: Record<string, string | string[]> = {};
    for (const [name, value] of url.searchParams) {
      const seen = query[name];
      query[name] = seen === undefined ? value : [seen, value].flat();
    }
    const signed = await signer.sign(
      {
        method: request.method,
        protocol: url.protocol,
        hostname: url.hostname,
        ...(url.port ? { port: Number(url.port) } : {}),
        path: url.pathname,
        query,
        headers: { ...request.headers, host: url.host },
        ...(request.body !== undefined ? { body: request.body } : {}),
      },
      { signingDate: options.now?.() ?? new Date() },
    );
    const { host: _host, ...sent } = signed.headers;
    return sent;
  };
}

/**
 * The signer, its modules loaded on the first request it signs: the credential chain and the
 * signing code are most of what `mesh` would otherwise load for every call, signed or not.
 */
async function makeSigner(options: SigV4SignerOptions): Promise<SignatureV4> {
  const [{ SignatureV4: Signer }, { Sha256 }] = await Promise.all([
    import('@smithy/signature-v4'),
    import('@smithy/core/checksum'),
  ]);
  return new Signer({
    service: options.service ?? executeApiService,
    region: options.region,
    credentials: options.credentials ?? (await import('@aws-sdk/credential-provider-node')).defaultProvider(),
    sha256: Sha256,
    applyChecksum: false,
  });
}

/**
 * Chooses SigV4 for execute-api URLs, with the region their host names. Any other URL (the local
 * runtime) is left unsigned unless `signingRegion` is given: then every URL is signed for it, as
 * an API behind a custom domain name needs.
 */
export function sigv4SignerFor(
  url: string,
  options: { readonly signingRegion?: string } = {},
): RequestSigner | undefined {
  const region = executeApiRegion(url) ?? options.signingRegion;
  return region ? createSigV4Signer({ region }) : undefined;
}
