import { describe, expect, it } from 'vitest';
import { createSigV4Signer } from '../../../lib/cli/sigv4.ts';
import { rehearsalOperator, verifyOperatorSignature } from '../../../tools/rehearsal/operator-signature.ts';

const url = 'http://127.0.0.1:4610/v1/nodes/app%2Dx/declaration?b=2&a=1';
const now = new Date('2026-12-01T10:00:00Z');

/** What the rehearsal's API receives from a request `mesh` signed. */
async function signed(
  options: { credentials?: { accessKeyId: string; secretAccessKey: string }; region?: string } = {},
) {
  const sign = createSigV4Signer({
    region: options.region ?? 'eu-west-1',
    credentials: options.credentials ?? rehearsalOperator,
    now: () => now,
  });
  const request = await sign(
    new Request(url, {
      method: 'POST',
      body: '{"node":"app"}',
      headers: { 'content-type': 'application/json' },
    }),
  );
  const headers: Record<string, string> = { host: '127.0.0.1:4610' };
  request.headers.forEach((value, name) => {
    headers[name] = value;
  });
  return {
    method: 'POST',
    target: '/v1/nodes/app%2Dx/declaration?b=2&a=1',
    headers,
    body: new TextEncoder().encode('{"node":"app"}'),
  };
}

const verify = (request: Awaited<ReturnType<typeof signed>>, at = now) =>
  verifyOperatorSignature(request, { region: 'eu-west-1', now: () => at });

describe('verifyOperatorSignature', () => {
  it('accepts a request `mesh` signed with the rehearsal operator’s key', async () => {
    expect(await verify(await signed())).toEqual({ ok: true, accessKeyId: rehearsalOperator.accessKeyId });
  });

  it('refuses a request changed after it was signed', async () => {
    const request = await signed();
    expect(await verify({ ...request, body: new TextEncoder().encode('{"node":"web"}') })).toMatchObject({
      ok: false,
      type: 'INVALID_SIGNATURE',
      message: expect.stringMatching(/does not match/),
    });
  });

  it('refuses an unsigned request as API Gateway does, and another key, region or time', async () => {
    const request = await signed();
    const { authorization: _, ...unsigned } = request.headers;
    expect(await verify({ ...request, headers: unsigned })).toMatchObject({
      type: 'MISSING_AUTHENTICATION_TOKEN',
    });
    const stranger = await signed({ credentials: { accessKeyId: 'AKIASTRANGER', secretAccessKey: 'x' } });
    expect(await verify(stranger)).toMatchObject({
      message: 'The security token included in the request is invalid.',
    });
    expect(await verify(await signed({ region: 'us-east-1' }))).toMatchObject({
      message: expect.stringMatching(/region/),
    });
    expect(await verify(request, new Date(now.getTime() + 6 * 60_000))).toMatchObject({
      message: expect.stringMatching(/expired/),
    });
  });
});
