import { TokenConditionFailedError, TokenHeldError, TokenRefusedError } from './errors.ts';
import { type PresentedKeys, presenterOf } from './keys.ts';
import type { NodeKeyStore, TokenRecord, TokenStore } from './ports.ts';
import { parseToken } from './token.ts';

export const defaultLeaseSeconds = 30;

export type EnrolRequest = { readonly node: string; readonly token: string; readonly keys: PresentedKeys };
export type Enrolled = {
  readonly node: string;
  readonly thumbprint: string;
  readonly enrolledAt: string;
  /** True when this presenter had already spent the token: a lost answer, recovered. */
  readonly again: boolean;
};

export type EnrolDeps = {
  readonly tokens: TokenStore;
  readonly keys: NodeKeyStore;
  readonly now?: () => Date;
  readonly leaseSeconds?: number;
};

/**
 * Enrols a node with a one-time token (diagnosis 082, point 4).
 *
 * 1. The presenting keys claim the token for a lease (conditional write).
 * 2. The node's keys are written to the identity table; the write overwrites, so the same
 *    presenter can make an interrupted attempt again.
 * 3. The token is spent, conditional on this presenter still being its claimant, in the same
 *    transaction that records the enrolment (`enrolledAt`, key thumbprint). Only from here is
 *    the node's key its credential: the host verifier requires the thumbprint this wrote.
 * 4. Key items left by presenters that lost the claim are pruned.
 *
 * A presenter that already spent the token (its answer was lost) goes through 2 and 4 again
 * and gets the same success. Every other outcome is a typed error: held (try again after the
 * lease left), refused (unknown, expired, revoked, spent by other keys), or the store could
 * not be asked (try again).
 */
export async function enrol(request: EnrolRequest, deps: EnrolDeps): Promise<Enrolled> {
  const now = deps.now ?? (() => new Date());
  const { tokenId, secretHash } = parseToken(request.token);
  const { thumbprint, presenter } = await presenterOf(request.keys);
  const node = request.node;
  const started = now();

  let spentEarlier: TokenRecord | undefined;
  try {
    await deps.tokens.claim({
      node,
      tokenId,
      secretHash,
      presenter,
      nowMs: started.getTime(),
      leaseUntilMs: started.getTime() + (deps.leaseSeconds ?? defaultLeaseSeconds) * 1000,
    });
  } catch (error) {
    if (!(error instanceof TokenConditionFailedError)) throw error;
    spentEarlier = spentByPresenter(error.old, tokenId, secretHash, presenter);
    if (!spentEarlier) throw refusal(error.old, { tokenId, secretHash, presenter }, started.getTime(), error);
  }

  await deps.keys.putKeys({
    node,
    thumbprint,
    signingKey: request.keys.signing,
    sealingKey: request.keys.sealing,
    presenter,
    storedAt: started.toISOString(),
  });

  let enrolledAt = spentEarlier?.spentAt ?? now().toISOString();
  if (!spentEarlier) {
    try {
      await deps.tokens.spend({ node, tokenId, presenter, thumbprint, enrolledAt });
    } catch (error) {
      if (!(error instanceof TokenConditionFailedError)) throw error;
      // The spend answered "no" yet this presenter is the spender: an earlier spend's answer was lost.
      const spent = spentByPresenter(error.old, tokenId, secretHash, presenter);
      if (!spent) throw refusal(error.old, { tokenId, secretHash, presenter }, now().getTime(), error);
      enrolledAt = spent.spentAt ?? enrolledAt;
      spentEarlier = spent;
    }
  }

  await deps.keys.pruneOtherKeys(node, thumbprint);
  return { node, thumbprint, enrolledAt, again: spentEarlier !== undefined };
}

function spentByPresenter(
  old: TokenRecord | undefined,
  tokenId: string,
  secretHash: string,
  presenter: string,
): TokenRecord | undefined {
  return old && old.tokenId === tokenId && old.secretHash === secretHash && old.spentBy === presenter
    ? old
    : undefined;
}

/** What a presenter is told when a conditional write on the token did not hold, from the item as it was. */
export function refusal(
  old: TokenRecord | undefined,
  presented: { tokenId: string; secretHash: string; presenter: string },
  nowMs: number,
  cause?: unknown,
): TokenRefusedError | TokenHeldError {
  const refused = (reason: TokenRefusedError['reason'], message: string) => {
    const error = new TokenRefusedError(reason, message);
    if (cause !== undefined) error.cause = cause;
    return error;
  };
  if (!old) return refused('unknown', 'no such token for this node');
  if (old.tokenId !== presented.tokenId) {
    return old.replacedIds.includes(presented.tokenId)
      ? refused('revoked', 'this token was replaced by a newer one')
      : refused('unknown', 'no such token for this node');
  }
  if (old.secretHash !== presented.secretHash) return refused('unknown', 'no such token for this node');
  if (old.spentBy !== undefined) return refused('spent', 'this token was spent by other keys');
  if (old.revokedAt !== undefined) return refused('revoked', 'this token was revoked');
  if (old.validUntilMs <= nowMs) return refused('expired', 'this token has expired');
  const leaseLeftMs = (old.leaseUntilMs ?? 0) - nowMs;
  // A claim by another presenter, live; or lapsed between our write and our read: ask again soon.
  return new TokenHeldError(Math.max(1, Math.ceil(leaseLeftMs / 1000)));
}
