import { describe, expect, it } from 'vitest';
import { refusal } from '../../lib/server/core/enrolment/enrol.ts';
import { TokenHeldError } from '../../lib/server/core/enrolment/errors.ts';
import type { TokenRecord } from '../../lib/server/core/enrolment/ports.ts';
import {
  hashSecret,
  newToken,
  parseToken,
  tokenPattern,
  tokenTtl,
} from '../../lib/server/core/enrolment/token.ts';

describe('tokens', () => {
  it('have the scannable form mesh_<id>_<secret> with a secret of at least 128 bits', () => {
    const { token, tokenId, secretHash } = newToken();

    const [, id, secret] = tokenPattern.exec(token) ?? [];

    expect(id).toBe(tokenId);
    expect((secret as string).length * Math.log2(62)).toBeGreaterThanOrEqual(128);
    expect(secretHash).toBe(hashSecret(secret as string));
    expect(secretHash).not.toContain(secret as string);
    expect(parseToken(token)).toEqual({ tokenId, secretHash });
  });

  it('are different every time', () => {
    const tokens = new Set(Array.from({ length: 200 }, () => newToken().token));
    expect(tokens.size).toBe(200);
  });

  it('take a ttl of a number and a unit, within a minute and 30 days', () => {
    expect(tokenTtl.parse('24h')).toBe(86_400);
    expect(tokenTtl.parse('15m')).toBe(900);
    expect(tokenTtl.safeParse('30s').success).toBe(false);
    expect(tokenTtl.safeParse('31d').success).toBe(false);
    expect(tokenTtl.safeParse('1y').success).toBe(false);
  });
});

describe('refusal', () => {
  const presented = { tokenId: 'AAAAAAAAAAAA', secretHash: 'h', presenter: 'me' };
  const token: TokenRecord = {
    node: 'alpha',
    tokenId: 'AAAAAAAAAAAA',
    secretHash: 'h',
    issuedAt: '2026-10-01T00:00:00Z',
    validUntilMs: 10_000,
    replaced: [{ tokenId: 'BBBBBBBBBBBB', secretHash: 'old' }],
  };
  const reason = (old: TokenRecord | undefined, p = presented, now = 1_000) => {
    const error = refusal(old, p, now);
    return error instanceof TokenHeldError ? `held ${error.retryAfterSeconds}` : error.reason;
  };

  it('says which: unknown, revoked by replacement, wrong secret, spent, revoked, expired, held', () => {
    expect(reason(undefined)).toBe('unknown');
    expect(reason(token, { ...presented, tokenId: 'BBBBBBBBBBBB', secretHash: 'old' })).toBe('revoked');
    expect(reason(token, { ...presented, tokenId: 'CCCCCCCCCCCC' })).toBe('unknown');
    expect(reason(token, { ...presented, secretHash: 'x' })).toBe('unknown');
    expect(reason({ ...token, spentBy: 'other' })).toBe('spent');
    expect(reason({ ...token, revokedAt: '2026-10-01T00:00:01Z' })).toBe('revoked');
    expect(reason(token, presented, 10_000)).toBe('expired');
    expect(reason({ ...token, claimedBy: 'other', leaseUntilMs: 8_001 })).toBe('held 8');
  });

  it('tells a replaced token\'s id alone nothing: without its secret it is "unknown"', () => {
    expect(reason(token, { ...presented, tokenId: 'BBBBBBBBBBBB', secretHash: 'guessed' })).toBe('unknown');
  });
});
