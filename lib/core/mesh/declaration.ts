import { randomBytes } from 'node:crypto';
import { canonicalJson, digestOf } from './canonical.ts';
import { type NodeSnapshot, type Provision, provisionKey, type Relation, relationKey } from './model.ts';

/**
 * One node's desired state: what its host applies. Every field is always present (null or an
 * empty list when there is nothing), and lists are sorted, so the digest depends on meaning only.
 */
export type Declaration = {
  readonly node: string;
  readonly modules: ReadonlyArray<{
    readonly name: string;
    readonly version: string | null;
    readonly provides: string | null;
  }>;
  /** What this node's modules consume: how to reach each resource and the credential to use. */
  readonly provisions: ReadonlyArray<{
    readonly module: string;
    readonly provider: { readonly node: string; readonly module: string; readonly kind: string };
    readonly resource: string;
    readonly user: string;
    readonly secret: string;
  }>;
  /** What this node's providers must create for their consumers. */
  readonly grants: ReadonlyArray<{
    readonly module: string;
    readonly kind: string;
    readonly consumer: { readonly node: string; readonly module: string };
    readonly resource: string;
    readonly user: string;
    readonly secret: string;
  }>;
};

export type Composed = {
  readonly declaration: Declaration;
  readonly canonical: string;
  readonly digest: string;
  /** Provisions this compose needs that do not exist yet; sending writes them, once. */
  readonly mints: readonly Provision[];
};

export type MintDetails = { readonly secret: () => string; readonly now: () => string };

/** A provision's secret: 192 random bits, URL-safe. */
export const newProvisionSecret = () => randomBytes(24).toString('base64url');

/**
 * The resource and user name a provider creates for one consumer module. Joined by `_`, which
 * node and module names (DNS labels) cannot contain, so no two consumers share a name: with `-`,
 * `a-b/c` and `a/b-c` would both be `a-b-c`.
 */
export const provisionName = (consumerNode: string, consumerModule: string) =>
  `${consumerNode}_${consumerModule}`;

/**
 * Composes a node's declaration from its snapshot. Provisions the node's relations need and that
 * were never minted are minted here (returned in `mints`, included in the declaration), so the
 * consumer's side is where minting happens; grants are only read.
 */
export function compose(snapshot: NodeSnapshot, mint: MintDetails): Composed {
  const existing = new Map(snapshot.provisions.map((p) => [provisionKey(p), p]));
  const mints: Provision[] = [];
  const provisions: Provision[] = [];
  for (const relation of snapshot.relations) {
    const found = existing.get(relationKey(relation));
    if (found) {
      provisions.push(found);
      continue;
    }
    const minted = mintProvision(snapshot, relation, mint);
    mints.push(minted);
    provisions.push(minted);
  }
  const grants = [...snapshot.grants];
  // A provider on the same node learns of the mint in the same declaration.
  for (const minted of mints) if (minted.providerNode === snapshot.node) grants.push(minted);

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
        secret: p.secret,
      }))
      .sort((a, b) => compare(provisionKey(toRelation(a)), provisionKey(toRelation(b)))),
    grants: grants
      .map((p) => ({
        module: p.providerModule,
        kind: p.kind,
        consumer: { node: p.consumerNode, module: p.consumerModule },
        resource: p.resource,
        user: p.user,
        secret: p.secret,
      }))
      .sort((a, b) =>
        compare(
          `${a.module}<${a.consumer.node}/${a.consumer.module}`,
          `${b.module}<${b.consumer.node}/${b.consumer.module}`,
        ),
      ),
  };
  const canonical = canonicalJson(declaration);
  return { declaration, canonical, digest: digestOf(canonical), mints };
}

function mintProvision(snapshot: NodeSnapshot, relation: Relation, mint: MintDetails): Provision {
  const name = provisionName(snapshot.node, relation.consumerModule);
  return {
    consumerNode: snapshot.node,
    consumerModule: relation.consumerModule,
    providerNode: relation.providerNode,
    providerModule: relation.providerModule,
    kind: relation.kind,
    resource: name,
    user: name,
    secret: mint.secret(),
    mintedAt: mint.now(),
  };
}

const toRelation = (p: { module: string; provider: { node: string; module: string } }) => ({
  consumerModule: p.module,
  providerNode: p.provider.node,
  providerModule: p.provider.module,
});

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Behind: the declaration differs from what was last sent (or nothing was ever sent). */
export const isBehind = (snapshot: NodeSnapshot, composed: Composed) =>
  composed.mints.length > 0 || snapshot.sent?.digest !== composed.digest;

/** A strong ETag that changes whenever the revision or the content does: the delivery's and the signal's. */
export const deliveryEtag = (digest: string, revision: number) => `"${revision}-${digest}"`;
