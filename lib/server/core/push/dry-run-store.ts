import { MeshRaceError } from '../mesh/errors.ts';
import { type NodeSnapshot, type Provision, relationKey, type SealingKey, type Sent } from '../mesh/model.ts';
import type { PushStore, SendWrite } from '../mesh/store.ts';

/** A send a dry run would have made: the node, its revision and the declaration's canonical JSON. */
export type DrySend = { readonly node: string; readonly revision: number; readonly canonical: string };

type NodeOverlay = {
  sent?: Sent;
  provisions: Provision[];
  grants: Provision[];
  /** Whether the node is marked, as far as the dry run has changed it; undefined: as stored. */
  marked?: boolean;
};

/**
 * The push store as a push would leave it, written nowhere: reads go to the real store, and
 * every send, mint and mark is kept here and laid over what is read. Running the push's own
 * steps on it (lib/server/core/push/plan.ts) answers exactly what that push would send, in which
 * rounds, without writing anything.
 */
export class DryRunPushStore implements PushStore {
  readonly #inner: PushStore;
  readonly #overlay = new Map<string, NodeOverlay>();
  readonly sends: DrySend[] = [];

  constructor(inner: PushStore) {
    this.#inner = inner;
  }

  async readNode(node: string): Promise<NodeSnapshot | undefined> {
    const real = await this.#inner.readNode(node);
    const overlay = this.#overlay.get(node);
    if (!real || !overlay) return real;
    return {
      ...real,
      sent: overlay.sent ?? real.sent,
      provisions: laidOver(real.provisions, overlay.provisions, relationKey),
      grants: laidOver(real.grants, overlay.grants, grantKey),
      mark: overlay.marked === undefined ? real.mark : overlay.marked ? (real.mark ?? 0) + 1 : undefined,
    };
  }

  readSealingKeys(nodes: readonly string[]): Promise<ReadonlyMap<string, SealingKey>> {
    return this.#inner.readSealingKeys(nodes);
  }

  async send(write: SendWrite): Promise<void> {
    const current = await this.readNode(write.node);
    if (current?.sent?.revision !== write.previousRevision) throw new MeshRaceError('revision');
    const own = this.#of(write.node);
    own.sent = { revision: write.revision, digest: write.digest, sentAt: write.sentAt };
    if (!write.keepMark) own.marked = false;
    for (const mint of write.mints) {
      own.provisions = laidOver(own.provisions, [mint], relationKey);
      const provider = this.#of(mint.providerNode);
      provider.grants = laidOver(provider.grants, [mint], grantKey);
      if (mint.providerNode !== write.node) provider.marked = true;
    }
    this.sends.push({ node: write.node, revision: write.revision, canonical: write.canonical });
  }

  async clearMark(node: string): Promise<void> {
    this.#of(node).marked = false;
  }

  async listMarked(): Promise<string[]> {
    const marked = new Set(await this.#inner.listMarked());
    for (const [node, overlay] of this.#overlay) {
      if (overlay.marked === true) marked.add(node);
      if (overlay.marked === false) marked.delete(node);
    }
    return [...marked];
  }

  listNodes(): Promise<string[]> {
    return this.#inner.listNodes();
  }

  #of(node: string): NodeOverlay {
    let overlay = this.#overlay.get(node);
    if (!overlay) {
      overlay = { provisions: [], grants: [] };
      this.#overlay.set(node, overlay);
    }
    return overlay;
  }
}

const grantKey = (p: Provision) => `${p.providerModule}<${p.consumerNode}/${p.consumerModule}`;

/** What is read, with what the dry run minted (or minted again) in place of it. */
function laidOver(
  read: readonly Provision[],
  minted: readonly Provision[],
  key: (p: Provision) => string,
): Provision[] {
  const byKey = new Map(read.map((p) => [key(p), p]));
  for (const p of minted) byKey.set(key(p), p);
  return [...byKey.values()];
}
