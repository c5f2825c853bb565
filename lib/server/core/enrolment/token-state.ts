import type { TokenRecord } from './ports.ts';

/**
 * What an operator may see of a node's token: its state and times, never the secret or its hash.
 * - issued: can be presented
 * - claimed: a presenter holds a live lease and is completing its enrolment
 * - spent: an enrolment completed with it
 * - revoked: revoked or replaced by a newer token
 * - expired: past its validity, and no live claim
 */
export type TokenState = 'issued' | 'claimed' | 'spent' | 'revoked' | 'expired';

/** A token as the read models see it: everything but the secret's hash. */
export type TokenFacts = Omit<TokenRecord, 'secretHash'>;

export type TokenView = {
  readonly state: TokenState;
  readonly tokenId: string;
  readonly issuedAt: string;
  readonly validUntil: string;
  readonly claimedAt: string | null;
  readonly spentAt: string | null;
  readonly revokedAt: string | null;
  /** How many earlier tokens this one replaced. */
  readonly replaced: number;
};

/** The order follows the claim and spend conditions: a live claim may still spend an expired token. */
export function tokenStateOf(token: TokenFacts, nowMs: number): TokenState {
  if (token.revokedAt !== undefined) return 'revoked';
  if (token.spentBy !== undefined) return 'spent';
  if (token.claimedBy !== undefined && (token.leaseUntilMs ?? 0) > nowMs) return 'claimed';
  if (token.validUntilMs <= nowMs) return 'expired';
  return 'issued';
}

export function viewOfToken(token: TokenFacts, nowMs: number): TokenView {
  return {
    state: tokenStateOf(token, nowMs),
    tokenId: token.tokenId,
    issuedAt: token.issuedAt,
    validUntil: new Date(token.validUntilMs).toISOString(),
    claimedAt: token.claimedAt ?? null,
    spentAt: token.spentAt ?? null,
    revokedAt: token.revokedAt ?? null,
    replaced: token.replaced.length,
  };
}
