import type { Actor } from '../audit/record.ts';
import { NoTokenError, TokenAlreadySpentError, TokenConditionFailedError } from './errors.ts';
import type { TokenRecord, TokenStore } from './ports.ts';
import { newToken } from './token.ts';

/** How many replaced tokens are kept, so an old token is refused as "revoked" rather than "unknown". */
const replacedKept = 10;

export type IssuedToken = {
  readonly node: string;
  readonly tokenId: string;
  /** The whole token, secret included: shown once to the operator, kept nowhere. */
  readonly token: string;
  readonly expiresAt: string;
  /** The id of the live token this one replaced (and so revoked), if any. */
  readonly replaced: string | null;
};

/** Issues the node's one live token, replacing (and so revoking) any earlier one. */
export async function issueToken(
  node: string,
  ttlSeconds: number,
  deps: { tokens: TokenStore; now?: () => Date },
  by: Actor,
): Promise<IssuedToken> {
  const now = deps.now?.() ?? new Date();
  const previous = await deps.tokens.read(node);
  const { token, tokenId, secretHash } = newToken();
  const validUntilMs = now.getTime() + ttlSeconds * 1000;
  const live = previous && previous.spentBy === undefined && previous.revokedAt === undefined;
  const record: TokenRecord = {
    node,
    tokenId,
    secretHash,
    issuedAt: now.toISOString(),
    validUntilMs,
    replaced: previous
      ? [{ tokenId: previous.tokenId, secretHash: previous.secretHash }, ...previous.replaced].slice(
          0,
          replacedKept,
        )
      : [],
  };
  await deps.tokens.issue(record, previous, by);
  return {
    node,
    tokenId,
    token,
    expiresAt: new Date(validUntilMs).toISOString(),
    replaced: live ? previous.tokenId : null,
  };
}

export type RevokedToken = { readonly node: string; readonly tokenId: string; readonly revokedAt: string };

/** Revokes the node's token unless it is already spent; revoking twice is the same as once. */
export async function revokeToken(
  node: string,
  deps: { tokens: TokenStore; now?: () => Date },
  by: Actor,
): Promise<RevokedToken> {
  const revokedAt = (deps.now?.() ?? new Date()).toISOString();
  try {
    const old = await deps.tokens.revoke(node, revokedAt, by);
    return { node, tokenId: old.tokenId, revokedAt: old.revokedAt ?? revokedAt };
  } catch (error) {
    if (!(error instanceof TokenConditionFailedError)) throw error;
    if (!error.old) throw new NoTokenError(node);
    throw new TokenAlreadySpentError(node);
  }
}
