import type { JWK } from 'jose';
import type { Actor } from '../audit/record.ts';
import type { NodeKeyRecord } from '../host-identity/ports.ts';

/**
 * The node's one live token as the inventory keeps it (pk `node#<name>`, sk `token`). The
 * secret itself is never stored: only its SHA-256 (the secret is 256 random bits, so a plain
 * hash cannot be searched back).
 */
export type TokenRecord = {
  readonly node: string;
  readonly tokenId: string;
  readonly secretHash: string;
  readonly issuedAt: string;
  /** Expiry, epoch milliseconds (not the table's TTL attribute: an expired token must still say "expired"). */
  readonly validUntilMs: number;
  /**
   * The tokens this one replaced, newest first: a presenter holding one (id and secret both) is
   * told "revoked", not "unknown". The secret's hash is kept so the id alone learns nothing.
   */
  readonly replaced: readonly ReplacedToken[];
  readonly claimedBy?: string;
  readonly claimedAt?: string;
  readonly leaseUntilMs?: number;
  readonly spentBy?: string;
  readonly spentAt?: string;
  readonly thumbprint?: string;
  readonly revokedAt?: string;
};

export type ReplacedToken = { readonly tokenId: string; readonly secretHash: string };

export type ClaimRequest = {
  readonly node: string;
  readonly tokenId: string;
  readonly secretHash: string;
  readonly presenter: string;
  readonly nowMs: number;
  readonly leaseUntilMs: number;
};

export type SpendRequest = {
  readonly node: string;
  readonly tokenId: string;
  readonly presenter: string;
  readonly thumbprint: string;
  /** The node's public X25519 key, which provisions are sealed to from this enrolment on. */
  readonly sealingKey: JWK;
  readonly enrolledAt: string;
  /** Where the enrolment came from; the record names the enrolled key as its principal. */
  readonly by: Actor;
};

/** The inventory's tokens and enrolments, as the enrolment core needs them. */
export interface TokenStore {
  /** Replaces the node's token (the old one is revoked by being replaced); the node must exist. */
  issue(token: TokenRecord, previous: TokenRecord | undefined, by: Actor): Promise<void>;
  read(node: string): Promise<TokenRecord | undefined>;
  /** Marks the token revoked unless spent; throws TokenConditionFailedError with the old item. */
  revoke(node: string, revokedAt: string, by: Actor): Promise<TokenRecord>;
  /**
   * Claims the token for `presenter` until `leaseUntilMs`, if it is this token, unspent,
   * unrevoked, unexpired (or expired while this presenter's lease is live), and unclaimed /
   * lapsed / already this presenter's; answers the token as claimed. Throws
   * TokenConditionFailedError with the old item otherwise.
   */
  claim(request: ClaimRequest): Promise<TokenRecord>;
  /** Spends the token if `presenter` is still its claimant, and records the enrolment, atomically. */
  spend(request: SpendRequest): Promise<void>;
}

export type PublicKeys = { readonly signing: JWK; readonly sealing: JWK };

/** The identity table's node keys, as enrolment writes them. */
export interface NodeKeyStore {
  /** Writes (overwrites) one presenter's keys, marked with the token it presents them for. */
  putKeys(
    record: NodeKeyRecord & {
      readonly presenter: string;
      readonly storedAt: string;
      readonly tokenId: string;
    },
  ): Promise<void>;
  /**
   * Deletes the node's key items other than `keep` that were put for one of `tokenIds` (the
   * spent token and the ones it replaced) or for no recorded token. A key put for any other
   * token — a newer one, issued since — is left alone, each delete conditional on that mark.
   */
  pruneOtherKeys(node: string, keep: string, tokenIds: readonly string[]): Promise<void>;
}

/** The node's completed enrolment: its key, the presenter of it, the token it was spent with. */
export type EnrolmentRecord = {
  readonly thumbprint: string;
  readonly presenter: string;
  readonly tokenId: string;
};

export type KeySwitch = {
  readonly node: string;
  readonly tokenId: string;
  readonly from: { readonly thumbprint: string; readonly presenter: string };
  readonly to: { readonly thumbprint: string; readonly presenter: string; readonly sealingKey: JWK };
  readonly rotatedAt: string;
  /** The host that asked: the record names its old key as the principal. */
  readonly by: Actor;
};

/** The inventory's side of a key rotation (lib/server/core/enrolment/rotation.ts). */
export interface KeyRotationStore {
  readEnrolment(node: string): Promise<EnrolmentRecord | undefined>;
  /**
   * Moves the enrolment and the spent token from one key to the other in one transaction, if
   * both still name `from`; EnrolmentMovedError with the enrolment as it was otherwise.
   */
  switchKeys(change: KeySwitch): Promise<void>;
}

/** What a disenrolment took away. */
export type Disenrolled = {
  readonly node: string;
  /** Whether the node had a completed enrolment to revoke. */
  readonly wasEnrolled: boolean;
  /** How many presented keys were deleted. */
  readonly keysRevoked: number;
};

/**
 * Revokes a node's host identity and keeps the node in the mesh: its enrolment, its token and
 * every key it presented go in one transaction across both tables, so its host is refused at its
 * next request and can come back only by enrolling again with a new token. NodeUnknownError.
 */
export interface HostIdentityRevocation {
  disenrol(node: string, by: Actor): Promise<Disenrolled>;
}
