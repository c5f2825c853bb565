import { canonicalJson, compareText as compare, digestOf } from '../canonical.ts';
import { grantHeldFor, keysOf, type MintDetails, type Minted, mintProvision, mintsDue } from './mint.ts';

export type { MintDetails, Minted } from './mint.ts';
export { newGeneration, newProvisionSecret, provisionName, sealWithHpke } from './mint.ts';

import { type NodeSnapshot, type Provision, provisionKey, relationKey, type SealingKey } from './model.ts';

/**
 * One node's desired state: what its host applies. Every field is always present (null or an
 * empty list when there is nothing), and lists are sorted, so the digest depends on meaning only.
 * No secret is in it: each provision and grant carries the secret sealed to this node's enrolled
 * key and its fingerprint (docs/decisions/sealed-secrets.md); the host opens it.
 */
export type Declaration = {
  readonly node: string;
  readonly modules: ReadonlyArray<{
    readonly name: string;
    readonly version: string | null;
    readonly provides: string | null;
  }>;
  /** What this node's modules consume: how to reach each resource and the credential to use. */
  readonly provisions: ReadonlyArray<
    {
      readonly module: string;
      readonly provider: { readonly node: string; readonly module: string; readonly kind: string };
      readonly resource: string;
      readonly user: string;
    } & SealedCopy
  >;
  /** What this node's providers must create for their consumers. */
  readonly grants: ReadonlyArray<
    {
      readonly module: string;
      readonly kind: string;
      readonly consumer: { readonly node: string; readonly module: string };
      readonly resource: string;
      readonly user: string;
    } & SealedCopy
  >;
  /**
   * This node's relations not minted yet, because a side has no completed enrolment (nothing can
   * be sealed to it; their enrolment mints it) or the provider is held back. Each names the nodes
   * it waits for.
   */
  readonly waiting: ReadonlyArray<{
    readonly module: string;
    readonly provider: { readonly node: string; readonly module: string; readonly kind: string };
    readonly waitingFor: readonly string[];
    /**
     * Present when the relation waits because its provider is held back by a rollout or a freeze
     * (`rollout:<id>`, `freeze:<on>`), not for an enrolment (docs/decisions/held-back.md).
     */
    readonly heldBack?: string;
  }>;
  /**
   * The agent version the host is to run (`mesh agent upgrade`, docs/host-agent.md "Releases"):
   * present only once one is set, so a declaration without one keeps its digest.
   */
  readonly agent?: { readonly version: string };
};

/** A secret as a declaration carries it: sealed to the node it is sent to, and its fingerprint. */
export type SealedCopy = {
  readonly generation: string;
  readonly fingerprint: string;
  readonly sealed: string;
};

/** A grant this node cannot be sent yet: its secret is being minted again by its consumer's compose. */
export type HeldGrant = {
  readonly module: string;
  readonly consumer: { readonly node: string; readonly module: string };
  readonly reason: 'sealed to an older key';
};

export type Composed = {
  readonly declaration: Declaration;
  readonly canonical: string;
  readonly digest: string;
  /** Provisions this compose needs that do not exist yet (or must be minted again); sending writes them, once. */
  readonly mints: readonly Minted[];
  /**
   * Grants whose copy no longer opens on this node (its key changed since they were minted):
   * while any is held the node is not sent, so its host never drops a consumer's user between
   * the old secret and the new one; the consumer's compose mints again and marks this node.
   */
  readonly held: readonly HeldGrant[];
};

/**
 * Composes a node's declaration from its snapshot and the enrolled sealing keys of the providers
 * it consumes (`providerKeys`; its own is in the snapshot). A relation whose two sides are
 * enrolled and that was never minted, or whose provision was sealed to a key that changed since
 * or was asked a new secret, is minted here (returned in `mints`, included in the declaration),
 * so the consumer's side is where minting happens; grants are only read. A relation with a side
 * not enrolled waits, named in the declaration.
 */
export async function compose(
  snapshot: NodeSnapshot,
  providerKeys: ReadonlyMap<string, SealingKey>,
  mint: MintDetails,
): Promise<Composed> {
  const due = mintsDue(snapshot, providerKeys);
  const mints = await Promise.all(
    due.map(async ({ relation, keys, replaces }) => ({
      ...(await mintProvision(snapshot.node, relation, keys, mint)),
      ...(replaces === undefined ? {} : { replaces }),
    })),
  );
  return assemble(snapshot, providerKeys, mints);
}

/**
 * Composes a node that has nothing to mint (a mesh written to the store already minted, as the
 * benches seed one); a mint due is an error here, since minting seals, which takes a promise.
 */
export function composeAsMinted(
  snapshot: NodeSnapshot,
  providerKeys: ReadonlyMap<string, SealingKey>,
): Composed {
  const due = mintsDue(snapshot, providerKeys);
  if (due.length > 0) throw new Error(`${snapshot.node} has ${due.length} provisions to mint`);
  return assemble(snapshot, providerKeys, []);
}

function assemble(
  snapshot: NodeSnapshot,
  providerKeys: ReadonlyMap<string, SealingKey>,
  mints: readonly Minted[],
): Composed {
  const own = snapshot.sealingKey;
  const existing = new Map(snapshot.provisions.map((p) => [provisionKey(p), p]));
  for (const minted of mints) existing.set(provisionKey(minted), minted);
  const provisions: Provision[] = [];
  const waiting: Array<Declaration['waiting'][number]> = [];
  for (const relation of snapshot.relations) {
    const { consumer, provider } = keysOf(snapshot, providerKeys, relation);
    if (!consumer || !provider) {
      waiting.push({
        module: relation.consumerModule,
        provider: { node: relation.providerNode, module: relation.providerModule, kind: relation.kind },
        waitingFor: [
          ...new Set([...(consumer ? [] : [snapshot.node]), ...(provider ? [] : [relation.providerNode])]),
        ],
      });
      continue;
    }
    const found = existing.get(relationKey(relation));
    if (found) provisions.push(found);
  }
  // A provider on the same node learns of the mint in the same declaration.
  const grantsByKey = new Map(snapshot.grants.map((g) => [grantKey(g), g]));
  for (const minted of mints)
    if (minted.providerNode === snapshot.node) grantsByKey.set(grantKey(minted), minted);
  const grants: Provision[] = [];
  const held: HeldGrant[] = [];
  for (const grant of grantsByKey.values()) {
    // A grant with no copy this node can open is left out: its consumer's compose mints it again.
    if (!own || grant.sealed.provider === undefined) continue;
    const reason = grantHeldFor(grant, own);
    if (reason)
      held.push({
        module: grant.providerModule,
        consumer: { node: grant.consumerNode, module: grant.consumerModule },
        reason,
      });
    else grants.push(grant);
  }
  const declaration: Declaration = {
    node: snapshot.node,
    modules: snapshot.assignments
      .map((a) => ({ name: a.module, version: a.version ?? null, provides: a.provides ?? null }))
      .sort((a, b) => compare(a.name, b.name)),
    provisions: provisions
      .map((p) => ({
        module: p.consumerModule,
        provider: { node: p.providerNode, module: p.providerModule, kind: p.kind },
        resource: p.resource,
        user: p.user,
        generation: p.generation,
        fingerprint: p.fingerprint,
        sealed: p.sealed.consumer ?? '',
      }))
      .sort((a, b) => compare(provisionKey(toRelation(a)), provisionKey(toRelation(b)))),
    grants: grants
      .map((p) => ({
        module: p.providerModule,
        kind: p.kind,
        consumer: { node: p.consumerNode, module: p.consumerModule },
        resource: p.resource,
        user: p.user,
        generation: p.generation,
        fingerprint: p.fingerprint,
        sealed: p.sealed.provider ?? '',
      }))
      .sort((a, b) =>
        compare(
          `${a.module}<${a.consumer.node}/${a.consumer.module}`,
          `${b.module}<${b.consumer.node}/${b.consumer.module}`,
        ),
      ),
    waiting: waiting.sort((a, b) => compare(provisionKey(toRelation(a)), provisionKey(toRelation(b)))),
    ...(snapshot.agent ? { agent: { version: snapshot.agent } } : {}),
  };
  const canonical = canonicalJson(declaration);
  return { declaration, canonical, digest: digestOf(canonical), mints, held };
}

/** The providers whose sealing keys composing the node needs: those of its relations, on other nodes. */
export const keyedProvidersOf = (snapshot: NodeSnapshot): string[] => [
  ...new Set(snapshot.relations.map((r) => r.providerNode).filter((node) => node !== snapshot.node)),
];

const grantKey = (p: Provision) => `${p.providerModule}<${p.consumerNode}/${p.consumerModule}`;

const toRelation = (p: { module: string; provider: { node: string; module: string } }) => ({
  consumerModule: p.module,
  providerNode: p.provider.node,
  providerModule: p.provider.module,
});

/** Behind: the declaration differs from what was last sent (or nothing was ever sent), or a mint is due. */
export const isBehind = (snapshot: NodeSnapshot, composed: Composed) =>
  composed.mints.length > 0 || composed.held.length > 0 || snapshot.sent?.digest !== composed.digest;

/** A strong ETag that changes whenever the revision or the content does: the delivery's and the signal's. */
export const deliveryEtag = (digest: string, revision: number) => `"${revision}-${digest}"`;
