import { randomBytes } from 'node:crypto';
import { fingerprintOf, relationOf, type SealBinding, sealSecret } from '../sealing/sealed-secret.ts';
import type { HeldGrant } from './declaration.ts';
import {
  type NodeSnapshot,
  type Provision,
  provisionKey,
  type Relation,
  relationKey,
  type SealingKey,
} from './model.ts';

/**
 * Minting a provision: a new secret, sealed at once to the consumer's and the provider's
 * enrolled keys, each copy bound to its side, the relation and the mint's generation
 * (docs/decisions/sealed-secrets.md). The plaintext lives only here, in memory, for the mint.
 */
/** A mint: a provision minted for the first time, or again in place of the generation it `replaces`. */
export type Minted = Provision & {
  /** The generation of the stored provision it replaces ('' for one kept with no sealed copy); absent for a first mint. */
  readonly replaces?: string;
};

export type MintDetails = {
  readonly secret: () => string;
  readonly now: () => string;
  /** A new mint's generation: unique, so a sealed copy is bound to the one mint it came from. */
  readonly generation: () => string;
  /** Seals a secret to one side's key, bound to where the copy belongs (lib/core/sealing). */
  readonly seal: (secret: string, key: SealingKey, binding: SealBinding) => Promise<string>;
};

/**
 * The resource and user name a provider creates for one consumer module. Joined by `_`, which
 * node and module names (DNS labels) cannot contain, so no two consumers share a name: with `-`,
 * `a-b/c` and `a/b-c` would both be `a-b-c`.
 */
export const provisionName = (consumerNode: string, consumerModule: string) =>
  `${consumerNode}_${consumerModule}`;

/** A provision's secret: 192 random bits, URL-safe. */
export const newProvisionSecret = () => randomBytes(24).toString('base64url');

/** A mint's generation: 96 random bits, URL-safe. */
export const newGeneration = () => randomBytes(12).toString('base64url');

export const sealWithHpke: MintDetails['seal'] = (secret, key, binding) =>
  sealSecret(secret, key.jwk, binding);

export type MintDue = {
  readonly relation: Relation;
  readonly keys: { readonly consumer: SealingKey; readonly provider: SealingKey };
  readonly replaces: string | undefined;
};

export function keysOf(
  snapshot: NodeSnapshot,
  providerKeys: ReadonlyMap<string, SealingKey>,
  relation: Relation,
) {
  const provider =
    relation.providerNode === snapshot.node ? snapshot.sealingKey : providerKeys.get(relation.providerNode);
  return { consumer: snapshot.sealingKey, provider };
}

export function mintsDue(snapshot: NodeSnapshot, providerKeys: ReadonlyMap<string, SealingKey>): MintDue[] {
  const existing = new Map(snapshot.provisions.map((p) => [provisionKey(p), p]));
  const due: MintDue[] = [];
  for (const relation of snapshot.relations) {
    const { consumer, provider } = keysOf(snapshot, providerKeys, relation);
    if (!consumer || !provider) continue;
    const found = existing.get(relationKey(relation));
    if (found && !provisionIsStale(found, consumer, provider)) continue;
    due.push({ relation, keys: { consumer, provider }, replaces: found?.generation });
  }
  return due;
}

/**
 * A provision is minted again when its copies are not both sealed to the keys its sides hold now
 * (a rotation, a new enrolment), when it has no sealed copy at all, or when a rotation was asked.
 */
function provisionIsStale(found: Provision, consumer: SealingKey, provider: SealingKey): boolean {
  return (
    found.rotationAsked === true ||
    found.sealed.consumer === undefined ||
    found.sealedTo.consumer !== consumer.id ||
    found.sealedTo.provider !== provider.id
  );
}

export function grantHeldFor(grant: Provision, own: SealingKey): HeldGrant['reason'] | undefined {
  // A rotation asked leaves the grant's copy opening where it is: the provider keeps the old
  // secret until its consumer mints the new one, and is never held for a consumer that won't.
  return grant.sealedTo.provider !== own.id ? 'sealed to an older key' : undefined;
}

export async function mintProvision(
  consumerNode: string,
  relation: Relation,
  keys: { readonly consumer: SealingKey; readonly provider: SealingKey },
  mint: MintDetails,
): Promise<Provision> {
  const name = provisionName(consumerNode, relation.consumerModule);
  const secret = mint.secret();
  const generation = mint.generation();
  const where = relationOf({ consumerNode, ...relation });
  const [consumer, provider] = await Promise.all([
    mint.seal(secret, keys.consumer, { node: consumerNode, side: 'consumer', relation: where, generation }),
    mint.seal(secret, keys.provider, {
      node: relation.providerNode,
      side: 'provider',
      relation: where,
      generation,
    }),
  ]);
  return {
    consumerNode,
    consumerModule: relation.consumerModule,
    providerNode: relation.providerNode,
    providerModule: relation.providerModule,
    kind: relation.kind,
    resource: name,
    user: name,
    mintedAt: mint.now(),
    generation,
    fingerprint: fingerprintOf(secret, new TextEncoder().encode(generation)),
    sealed: { consumer, provider },
    sealedTo: { consumer: keys.consumer.id, provider: keys.provider.id },
  };
}
