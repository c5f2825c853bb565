import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ApiClient } from '../../lib/clients/http/api-client.ts';
import { createSigV4Signer, executeApiRegion, sigv4SignerFor } from '../../lib/clients/http/sigv4.ts';
import type { HeaderReader, HttpTransport } from '../../lib/clients/http/transport.ts';

/** The AWS SigV4 test suite's credentials and clock. */
const suite = {
  credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' },
  region: 'us-east-1',
  service: 'service',
  now: () => new Date('2015-08-30T12:36:00Z'),
};

const sha256 = (data: string | Uint8Array) => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();
const rfc3986 = (value: string) =>
  encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** A request as it reaches API Gateway: Host is the URL's, whether or not a header named it. */
type Arrived = {
  readonly method: string;
  readonly url: URL;
  readonly headers: HeaderReader;
  readonly body: string;
};

/**
 * What API Gateway does with a signed request, written from the SigV4 specification alone:
 * rebuild the canonical request from what arrives, derive the key, recompute the signature.
 */
function verify(request: Arrived, secretAccessKey: string, region: string, service: string) {
  const authorization = request.headers.get('authorization') ?? '';
  const parts =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/.exec(
      authorization,
    );
  if (!parts) return { valid: false, signedHeaders: [] as string[] };
  const [, , day, scopeRegion, scopeService, signedList, signature] = parts as unknown as string[];
  const signedHeaders = (signedList as string).split(';');
  const { url } = request;
  const headerValue = (name: string) =>
    name === 'host' ? url.host : (request.headers.get(name) ?? '').trim().replace(/\s+/g, ' ');
  const canonicalQuery = [...url.searchParams]
    .map(([name, value]) => [rfc3986(name), rfc3986(value)])
    .sort(([a, x], [b, y]) =>
      a === b ? ((x as string) < (y as string) ? -1 : 1) : (a as string) < (b as string) ? -1 : 1,
    )
    .map(([name, value]) => `${name}=${value}`)
    .join('&');
  const canonicalPath = url.pathname
    .split('/')
    .map((segment) => rfc3986(segment))
    .join('/');
  const canonical = [
    request.method,
    canonicalPath,
    canonicalQuery,
    ...signedHeaders.map((name) => `${name}:${headerValue(name)}`),
    '',
    signedList,
    sha256(request.body),
  ].join('\n');
  const amzDate = request.headers.get('x-amz-date') ?? '';
  const scope = `${day}/${scopeRegion}/${scopeService}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n');
  let key = hmac(`AWS4${secretAccessKey}`, day as string);
  for (const part of [scopeRegion, scopeService, 'aws4_request']) key = hmac(key, part as string);
  const expected = createHmac('sha256', key).update(toSign).digest('hex');
  return {
    valid: expected === signature && scopeRegion === region && scopeService === service,
    signedHeaders,
  };
}

/** A transport that answers 200 and keeps each request as it would have gone on the wire. */
function recordingTransport() {
  const sent: Array<Parameters<HttpTransport>[0]> = [];
  const transport: HttpTransport = async (request) => {
    sent.push(request);
    return { status: 200, headers: new Headers(), text: '{}' };
  };
  return { transport, sent };
}

const readerOf = (headers: Readonly<Record<string, string>>): HeaderReader => ({
  get: (name) => headers[name.toLowerCase()] ?? null,
});

const stack = 'https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/v1';
const operatorSigner = () =>
  createSigV4Signer({
    region: 'eu-west-1',
    credentials: { ...suite.credentials, sessionToken: 'session-token-example' },
    now: suite.now,
  });
const pushBody = { node: 'alpha', note: 'ünïcode' };

describe('createSigV4Signer', () => {
  it('signs the SigV4 test suite get-vanilla request to its published signature', async () => {
    const sign = createSigV4Signer(suite);

    const headers = await sign({
      method: 'GET',
      url: new URL('https://example.amazonaws.com/'),
      headers: {},
    });

    expect(headers['x-amz-date']).toBe('20150830T123600Z');
    expect(headers.authorization).toBe(
      'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31',
    );
    expect(headers).not.toHaveProperty('host');
  });

  it('signs what the client sends (body, query, session token, a caller’s header) so a verifier recomputes the signature', async () => {
    const { transport, sent } = recordingTransport();
    const client = new ApiClient(stack, { signer: operatorSigner(), transport });

    await client.send('POST', '/push?max-rounds=3&behind=true&a=2&a=1', pushBody, { 'If-Match': '"7"' });
    const [request] = sent;
    if (!request) throw new Error('nothing was sent');
    const verdict = verify(
      { ...request, headers: readerOf(request.headers), body: request.body ?? '' },
      suite.credentials.secretAccessKey,
      'eu-west-1',
      'execute-api',
    );

    expect(verdict.valid).toBe(true);
    expect(verdict.signedHeaders).toEqual(
      expect.arrayContaining([
        'host',
        'x-amz-date',
        'x-amz-security-token',
        'content-type',
        'accept',
        'if-match',
      ]),
    );
    expect(request.headers['x-amz-security-token']).toBe('session-token-example');
    expect(request.headers).not.toHaveProperty('host');
    expect(request.body).toBe(JSON.stringify(pushBody));
  });

  it('signs what fetch is handed, Host left to fetch, so the request verifies as it arrives', async () => {
    const handed: Request[] = [];
    const fake: typeof fetch = async (input) => {
      handed.push(input as Request);
      return Response.json({});
    };
    const client = new ApiClient(stack, { signer: operatorSigner(), fetch: fake });

    await client.send('POST', '/push?behind=true', pushBody);
    const [request] = handed;
    if (!request) throw new Error('nothing was handed to fetch');
    const verdict = verify(
      {
        method: request.method,
        url: new URL(request.url),
        headers: request.headers,
        body: await request.text(),
      },
      suite.credentials.secretAccessKey,
      'eu-west-1',
      'execute-api',
    );

    expect(verdict.valid).toBe(true);
    expect(request.headers.get('host')).toBeNull();
  });

  it('gives a verifier with another secret a signature that does not verify', async () => {
    const sign = createSigV4Signer({ ...suite, service: 'execute-api' });
    const request = {
      method: 'GET',
      url: new URL(`${stack}/status`),
      headers: { accept: 'application/json' },
    };

    const headers = await sign(request);
    const arrived = { ...request, headers: readerOf(headers), body: '' };

    expect(verify(arrived, suite.credentials.secretAccessKey, 'us-east-1', 'execute-api').valid).toBe(true);
    expect(verify(arrived, 'another-secret', 'us-east-1', 'execute-api').valid).toBe(false);
  });
});

describe('executeApiRegion', () => {
  it.each([
    ['https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/v1/', 'eu-west-1'],
    ['https://a1b2c3d4e5.execute-api.cn-north-1.amazonaws.com.cn/v1', 'cn-north-1'],
    ['http://127.0.0.1:4600', undefined],
    ['https://execute-api.eu-west-1.amazonaws.com.evil.example/', undefined],
    ['not a url', undefined],
  ])('reads %s as %s', (url, region) => {
    expect(executeApiRegion(url)).toBe(region);
  });
});

describe('sigv4SignerFor', () => {
  it('signs execute-api URLs and leaves the local runtime unsigned', () => {
    expect(sigv4SignerFor('https://a1b2c3d4e5.execute-api.us-east-1.amazonaws.com/v1')).toBeTypeOf(
      'function',
    );
    expect(sigv4SignerFor('http://127.0.0.1:4600')).toBeUndefined();
  });

  it('signs any URL for the region it is given (a custom domain, the rehearsal)', () => {
    expect(sigv4SignerFor('http://127.0.0.1:4610/v1', { signingRegion: 'us-east-1' })).toBeTypeOf('function');
  });
});
