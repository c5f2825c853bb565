/**
 * The mesh as the core sees one node of it: everything under the node's partition, read whole.
 * A provision lives twice: on the consumer's side (how to reach the resource) and on the
 * provider's side as a grant (what to create), written together when minted.
 */
export type Assignment = {
  readonly module: string;
  /** The module's current version; null until an upgrade sets one. */
  readonly version: string | null;
  /** The kind of resource the module provides (e.g. `amqp`), or null when it is not a provider. */
  readonly provides: string | null;
};

export type Relation = {
  readonly consumerModule: string;
  readonly providerNode: string;
  readonly providerModule: string;
  /** The provider's kind, read when the relation was made (a module's kind never changes). */
  readonly kind: string;
};

export type Provision = {
  readonly consumerNode: string;
  readonly consumerModule: string;
  readonly providerNode: string;
  readonly providerModule: string;
  readonly kind: string;
  /** The resource and user the provider creates, named after the consumer so they never collide. */
  readonly resource: string;
  readonly user: string;
  readonly mintedAt: string;
  /** The mint it came from: a provision minted again (rotation, a new key) is a new generation. */
  readonly generation: string;
  /** A keyed hash prefix of the secret (lib/core/sealing): tells two secrets apart, opens nothing. */
  readonly fingerprint: string;
  /**
   * The secret sealed to each side's enrolled key (docs/decisions/sealed-secrets.md). The consumer's
   * item keeps the consumer's copy, the grant the provider's: a read sees its own side's copy only.
   * The plaintext is held nowhere.
   */
  readonly sealed: { readonly consumer?: string; readonly provider?: string };
  /** The ids of the sealing keys the copies were sealed to: a key that changed makes the provision stale. */
  readonly sealedTo: { readonly consumer: string; readonly provider: string };
  /** An operator asked for a new secret (`mesh rotate`): the consumer's next compose mints one. */
  readonly rotationAsked?: boolean;
};

/** A node's enrolled sealing key, as its completed enrolment (or last key rotation) recorded it. */
export type SealingKey = {
  /** A short hash of the public key: what a minted provision names to say which key it was sealed to. */
  readonly id: string;
  readonly jwk: { readonly kty: string; readonly crv: string; readonly x: string };
};

export type Sent = {
  readonly revision: number;
  readonly digest: string;
  readonly sentAt: string;
  /** How many parts the store keeps it in, when it was too large for one item; its own bookkeeping, never in the digest. */
  readonly parts?: number;
};

/** A relation of another module (on this node or another) to one of this node's providers. */
export type Dependent = {
  readonly consumerNode: string;
  readonly consumerModule: string;
  readonly providerModule: string;
};

export type NodeSnapshot = {
  readonly node: string;
  readonly assignments: readonly Assignment[];
  readonly relations: readonly Relation[];
  /** Who consumes this node's providers: what a removal of one of them would leave dangling. */
  readonly dependents: readonly Dependent[];
  /** Provisions this node consumes, keyed on the consumer's side. */
  readonly provisions: readonly Provision[];
  /** Provisions issued from this node's providers. */
  readonly grants: readonly Provision[];
  readonly sent: Sent | undefined;
  /** The stale mark's counter when the node is marked possibly behind. */
  readonly mark: number | undefined;
  /** The node's enrolled sealing key; undefined while no enrolment is complete (its relations wait). */
  readonly sealingKey: SealingKey | undefined;
  /** The agent version its host is to run (`mesh agent upgrade`); absent until one is set. */
  readonly agent?: string | undefined;
};

export const relationKey = (relation: Pick<Relation, 'consumerModule' | 'providerNode' | 'providerModule'>) =>
  `${relation.consumerModule}>${relation.providerNode}/${relation.providerModule}`;

export const provisionKey = relationKey;
