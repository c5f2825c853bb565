import type { Actor } from '../audit/record.ts';
import { type EventSink, enrolledEvent, tell } from '../events/events.ts';
import { TokenConditionFailedError, TokenHeldError, TokenRefusedError } from './errors.ts';
import { type PresentedKeys, presenterOf } from './keys.ts';
import type { NodeKeyStore, TokenRecord, TokenStore } from './ports.ts';
import { parseToken } from './token.ts';

const defaultLeaseSeconds = 30;

export type EnrolRequest = {
  readonly node: string;
  readonly token: string;
  readonly keys: PresentedKeys;
  /** Where the request came from, for the enrolment's audit record. */
  readonly by: Actor;
};
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
  /** Told `node.enrolled` once this presenter spent the token (docs/events.md); not when it asks again. */
  readonly events?: EventSink;
};

/**
 * Enrols a node with a one-time token, claimed and spent only once the enrolment is complete
 * (docs/decisions/claimed-not-spent-tokens.md).
 *
 * 1. The presenting keys claim the token for a lease (conditional write).
 * 2. The node's keys are written to the identity table, marked with the token; the write
 *    overwrites, so the same presenter can make an interrupted attempt again.
 * 3. The token is spent, conditional on this presenter still being its claimant, in the same
 *    transaction that records the enrolment (`enrolledAt`, key thumbprint). Only from here is
 *    the node's key its credential: the host verifier requires the thumbprint this wrote.
 * 4. Key items left by presenters that lost this token's claim, or put for the tokens it
 *    replaced, are pruned; a key put for a newer token is never touched (each delete is
 *    conditional on the key's token mark), so a late or repeated prune cannot remove the key
 *    of a node enrolled again since.
 *
 * A presenter that already spent the token (its answer was lost) goes through 2 and 4 again
 * and gets the same success, unless the node has been given a newer token since: then it is
 * told "revoked" and nothing is written. Every other outcome is a typed error: held (try again
 * after the lease left), refused (unknown, expired, revoked, spent by other keys), or the store
 * could not be asked (try again).
 */
export async function enrol(request: EnrolRequest, deps: EnrolDeps): Promise<Enrolled> {
  const now = deps.now ?? (() => new Date());
  const { tokenId, secretHash } = parseToken(request.token);
  const { thumbprint, presenter } = await presenterOf(request.keys);
  const presented = { tokenId, secretHash, presenter };
  const node = request.node;
  const started = now();

  let token: TokenRecord;
  let spentEarlier = false;
  try {
    token = await deps.tokens.claim({
      node,
      tokenId,
      secretHash,
      presenter,
      nowMs: started.getTime(),
      leaseUntilMs: started.getTime() + (deps.leaseSeconds ?? defaultLeaseSeconds) * 1000,
    });
  } catch (error) {
    if (!(error instanceof TokenConditionFailedError)) throw error;
    const spent = spentByPresenter(error.old, presented);
    if (!spent) throw refusal(error.old, presented, started.getTime(), error);
    token = await stillTheNodesToken(node, presented, deps.tokens, now);
    spentEarlier = true;
  }

  await deps.keys.putKeys({
    node,
    thumbprint,
    signingKey: request.keys.signing,
    sealingKey: request.keys.sealing,
    presenter,
    storedAt: started.toISOString(),
    tokenId,
  });

  let enrolledAt = (spentEarlier ? token.spentAt : undefined) ?? now().toISOString();
  if (!spentEarlier) {
    try {
      await deps.tokens.spend({
        node,
        tokenId,
        presenter,
        thumbprint,
        sealingKey: request.keys.sealing,
        enrolledAt,
        by: request.by,
      });
    } catch (error) {
      if (!(error instanceof TokenConditionFailedError)) throw error;
      // The spend answered "no" yet this presenter is the spender: an earlier spend's answer was lost.
      const spent = spentByPresenter(error.old, presented);
      if (!spent) throw refusal(error.old, presented, now().getTime(), error);
      enrolledAt = spent.spentAt ?? enrolledAt;
      spentEarlier = true;
    }
  }

  await deps.keys.pruneOtherKeys(node, thumbprint, [tokenId, ...token.replaced.map((old) => old.tokenId)]);
  if (!spentEarlier) await tell(deps.events, [enrolledEvent({ node, thumbprint, enrolledAt })]);
  return { node, thumbprint, enrolledAt, again: spentEarlier };
}

type Presented = { readonly tokenId: string; readonly secretHash: string; readonly presenter: string };

/**
 * The token this presenter spent earlier, read again before its keys are touched: the claim's
 * answer may be from before the operator issued a newer token and another presenter enrolled
 * with it, and re-putting or pruning keys then would work against that newer enrolment.
 */
async function stillTheNodesToken(
  node: string,
  presented: Presented,
  tokens: TokenStore,
  now: () => Date,
): Promise<TokenRecord> {
  const current = await tokens.read(node);
  const spent = spentByPresenter(current, presented);
  if (!spent) throw refusal(current, presented, now().getTime());
  return spent;
}

function spentByPresenter(old: TokenRecord | undefined, presented: Presented): TokenRecord | undefined {
  return old &&
    old.tokenId === presented.tokenId &&
    old.secretHash === presented.secretHash &&
    old.spentBy === presented.presenter
    ? old
    : undefined;
}

/** What a presenter is told when a conditional write on the token did not hold, from the item as it was. */
export function refusal(
  old: TokenRecord | undefined,
  presented: Presented,
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
    // Only the whole token (id and secret) learns it was replaced: an id alone answers "unknown".
    const replaced = old.replaced.some(
      (earlier) => earlier.tokenId === presented.tokenId && earlier.secretHash === presented.secretHash,
    );
    return replaced
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
