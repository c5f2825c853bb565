import { Sha256 } from '@smithy/core/checksum';
import { SignatureV4 } from '@smithy/signature-v4';

/**
 * The one operator the rehearsal knows: requests to IAM-authorized methods must be signed with
 * SigV4 by this key (service execute-api, the rehearsal's region), as API Gateway requires a
 * signature by a key IAM knows. The key opens nothing on AWS.
 */
export const rehearsalOperator = {
  accessKeyId: 'AKIAREHEARSALOPERATOR',
  secretAccessKey: 'rehearsal-operator-secret-opens-nothing-on-aws',
  userArn: (account: string) => `arn:aws:iam::${account}:user/rehearsal-operator`,
} as const;

export type SignedRequest = {
  readonly method: string;
  /** The request target as received: path and query, still percent-encoded. */
  readonly target: string;
  /** Header names lower-cased. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Uint8Array;
};

export type SignatureVerdict =
  | { readonly ok: true; readonly accessKeyId: string }
  | {
      readonly ok: false;
      readonly type: 'MISSING_AUTHENTICATION_TOKEN' | 'INVALID_SIGNATURE';
      readonly message: string;
    };

const skewLimitMs = 5 * 60 * 1000;
const authorizationPattern =
  /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request,\s*SignedHeaders=([^,]+),\s*Signature=([0-9a-f]{64})$/;

const refuse = (message: string): SignatureVerdict => ({ ok: false, type: 'INVALID_SIGNATURE', message });

/** Checks a request's SigV4 signature as API Gateway's IAM authorization does, with the rehearsal's operator key. */
export async function verifyOperatorSignature(
  request: SignedRequest,
  options: { readonly region: string; readonly now?: () => Date },
): Promise<SignatureVerdict> {
  const authorization = request.headers.authorization;
  if (!authorization)
    return { ok: false, type: 'MISSING_AUTHENTICATION_TOKEN', message: 'Missing Authentication Token' };
  const match = authorizationPattern.exec(authorization);
  if (!match)
    return {
      ok: false,
      type: 'INVALID_SIGNATURE',
      message: `Authorization header requires 'Credential', 'SignedHeaders' and 'Signature' parameters`,
    };
  const [, accessKeyId, , region, service, signedHeaders, signature] = match as unknown as string[];
  if (accessKeyId !== rehearsalOperator.accessKeyId)
    return refuse('The security token included in the request is invalid.');
  if (service !== 'execute-api')
    return refuse(`Credential should be scoped to correct service: 'execute-api'.`);
  if (region !== options.region)
    return refuse(`Credential should be scoped to a valid region, not '${region}'.`);
  const amzDate = request.headers['x-amz-date'] ?? '';
  const signedAt = Date.parse(
    amzDate.replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/, '$1-$2-$3T$4:$5:$6Z'),
  );
  const now = (options.now?.() ?? new Date()).getTime();
  if (Number.isNaN(signedAt))
    return refuse("Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.");
  if (Math.abs(now - signedAt) > skewLimitMs)
    return refuse(
      `Signature expired: ${amzDate} is now earlier or later than the 5 minutes API Gateway allows.`,
    );

  const url = new URL(request.target, 'http://rehearsal');
  const headers: Record<string, string> = {};
  for (const name of (signedHeaders as string).split(';')) headers[name] = request.headers[name] ?? '';
  const query: Record<string, string | string[]> = {};
  for (const [name, value] of url.searchParams) {
    const seen = query[name];
    query[name] = seen === undefined ? value : [seen, value].flat();
  }
  const signer = new SignatureV4({
    service: 'execute-api',
    region: options.region,
    credentials: {
      accessKeyId: rehearsalOperator.accessKeyId,
      secretAccessKey: rehearsalOperator.secretAccessKey,
    },
    sha256: Sha256,
    applyChecksum: false,
  });
  const expected = await signer.sign(
    {
      method: request.method,
      protocol: 'http:',
      hostname: (headers.host ?? '').split(':')[0] as string,
      path: url.pathname,
      query,
      headers,
      ...(request.body.length > 0 ? { body: request.body } : {}),
    },
    { signingDate: new Date(signedAt) },
  );
  const computed = /Signature=([0-9a-f]{64})/.exec(String(expected.headers.authorization))?.[1];
  if (computed !== signature)
    return refuse(
      'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.',
    );
  return { ok: true, accessKeyId };
}
