import { mapLimit } from '../map-limit.ts';
import type { DeliveryReader } from '../ports.ts';
import type { NodeSignal } from '../signal/channel.ts';
import {
  type Composed,
  compose,
  type Declaration,
  deliveryEtag,
  type HeldGrant,
  isBehind,
  keyedProvidersOf,
  type MintDetails,
  newGeneration,
  newProvisionSecret,
  sealWithHpke,
} from './declaration.ts';
import { DeclarationTooLargeError, MeshRaceError, NodeNotFoundError, PushContentionError } from './errors.ts';
import { meshLimits } from './limits.ts';
import type { NodeSnapshot } from './model.ts';
import type { PushStore } from './store.ts';
import { waitingOf } from './waiting.ts';

/**
 * One node's send: its revision now, whether this call sent it, the other nodes its mints
 * marked, and the other nodes it pairs with: the providers of its provisions and the consumers
 * of its grants, which a rollout's wave must send with it (docs/decisions/rollouts-in-waves.md).
 */
export type NodeSend = {
  readonly node: string;
  readonly revision: number;
  readonly sent: boolean;
  readonly marked: readonly string[];
  readonly pairs: readonly string[];
  /** Grants that kept the node from being sent: their consumers mint them again, and the node stays marked. */
  readonly held?: readonly HeldGrant[];
};

const attempts = 5;
const encoder = new TextEncoder();

/**
 * Compose-and-send, node by node. Reads only the node's own partition and writes at most once,
 * so the cost of a push follows the nodes it touches, never the size of the mesh.
 */
export class Pusher {
  readonly #store: PushStore;
  readonly #mint: MintDetails;
  readonly #announce: (node: string, signal: NodeSignal) => Promise<unknown>;
  readonly #maxDeclarationBytes: number;
  readonly #lastSent: DeliveryReader | undefined;

  constructor(options: {
    readonly store: PushStore;
    /** @default meshLimits.declarationBytes */
    readonly maxDeclarationBytes?: number;
    readonly mint?: Partial<MintDetails>;
    /** Tells the node's host, after a send committed (SignalAnnouncer: never throws). @default nothing */
    readonly announce?: (node: string, signal: NodeSignal) => Promise<unknown>;
    /** What each node was last sent: a wave pairs a provider with the consumers of the grants it drops. */
    readonly lastSent?: DeliveryReader;
  }) {
    this.#lastSent = options.lastSent;
    this.#store = options.store;
    this.#announce = options.announce ?? (async () => undefined);
    this.#maxDeclarationBytes = options.maxDeclarationBytes ?? meshLimits.declarationBytes;
    this.#mint = {
      secret: options.mint?.secret ?? newProvisionSecret,
      now: options.mint?.now ?? (() => new Date().toISOString()),
      generation: options.mint?.generation ?? newGeneration,
      seal: options.mint?.seal ?? sealWithHpke,
    };
  }

  /**
   * Composes the node and sends it when it is behind; clears its mark when it is not. A lost
   * race (another push sent it, or minted the same provision) is read again and retried. Once a
   * send committed, the node's host is told (its signal). A declaration over its size limit is
   * never written: DeclarationTooLargeError, for the push to name and go on without it.
   */
  async sendNode(node: string, options: { readonly pairing?: boolean } = {}): Promise<NodeSend> {
    for (let attempt = 0; attempt < attempts; attempt += 1) {
      const snapshot = await this.#store.readNode(node);
      if (!snapshot) throw new NodeNotFoundError(node);
      const composed = await this.#compose(snapshot);
      if (!isBehind(snapshot, composed)) {
        if (snapshot.mark !== undefined) await this.#store.clearMark(node, snapshot.mark);
        return { node, revision: snapshot.sent?.revision ?? 0, sent: false, marked: [], pairs: [] };
      }
      if (composed.held.length > 0) {
        // Its consumers mint the held grants again and mark it; a later round sends it whole.
        const consumers = [...new Set(composed.held.map((grant) => grant.consumer.node))].filter(
          (n) => n !== node,
        );
        return {
          node,
          revision: snapshot.sent?.revision ?? 0,
          sent: false,
          marked: [],
          pairs: consumers,
          held: composed.held,
        };
      }
      const bytes = encoder.encode(composed.canonical).length;
      if (bytes > this.#maxDeclarationBytes)
        throw new DeclarationTooLargeError(node, bytes, this.#maxDeclarationBytes);
      const revision = (snapshot.sent?.revision ?? 0) + 1;
      const dropped = options.pairing && snapshot.sent ? await this.#grantedBefore(node) : [];
      const waiting = waitingOf(composed.declaration.waiting);
      try {
        await this.#store.send({
          node,
          revision,
          previousRevision: snapshot.sent?.revision,
          digest: composed.digest,
          canonical: composed.canonical,
          sentAt: this.#mint.now(),
          mints: composed.mints,
          mark: snapshot.mark,
          ...(snapshot.sent?.parts ? { previousParts: snapshot.sent.parts } : {}),
          ...(waiting ? { waiting } : {}),
        });
      } catch (error) {
        if (error instanceof MeshRaceError) continue;
        throw error;
      }
      await this.#announce(node, { revision, etag: deliveryEtag(composed.digest, revision) });
      const marked = [...new Set(composed.mints.map((m) => m.providerNode).filter((n) => n !== node))];
      const { provisions, grants } = composed.declaration;
      const pairs = new Set([
        ...provisions.map((p) => p.provider.node),
        ...grants.map((g) => g.consumer.node),
        ...dropped,
      ]);
      pairs.delete(node);
      return { node, revision, sent: true, marked, pairs: [...pairs] };
    }
    throw new PushContentionError(node);
  }

  /** Of these nodes, the ones whose declaration differs from what they were last sent (reads only). */
  async behindOf(nodes: readonly string[]): Promise<string[]> {
    const checks = await mapLimit(nodes, 8, async (node) => {
      const snapshot = await this.#store.readNode(node);
      return snapshot !== undefined && isBehind(snapshot, await this.#compose(snapshot));
    });
    return nodes.filter((_, index) => checks[index]);
  }

  /** Composes with the sealing keys of the providers the node consumes, read in one request. */
  async #compose(snapshot: NodeSnapshot): Promise<Composed> {
    const providers = keyedProvidersOf(snapshot);
    const keys = providers.length > 0 ? await this.#store.readSealingKeys(providers) : new Map();
    return compose(snapshot, keys, this.#mint);
  }

  /**
   * The consumers of the grants the node was last sent: a grant it drops now (a relation taken
   * away) must not reach the provider before the consumer drops its provision.
   */
  async #grantedBefore(node: string): Promise<string[]> {
    const delivery = await this.#lastSent?.readDelivery(node);
    const declaration = delivery?.declaration as Partial<Declaration> | undefined;
    return (declaration?.grants ?? []).map((grant) => grant.consumer.node);
  }

  /** Of these nodes, the ones marked possibly behind (a behind node is always marked). */
  async markedOf(nodes: readonly string[]): Promise<string[]> {
    if (nodes.length === 0) return [];
    const marked = new Set(await this.#store.listMarked());
    return nodes.filter((node) => marked.has(node));
  }

  /**
   * The nodes to look at in a round: the marked ones, read strongly; for the audit every node
   * too. Every node is listed through an index that may lag, which is why the marked ones are
   * always added: a node added a moment ago is marked, so the audit cannot miss it.
   */
  async candidates(full: boolean): Promise<string[]> {
    const marked = await this.#store.listMarked();
    if (!full) return marked;
    return [...new Set([...(await this.#store.listNodes()), ...marked])];
  }
}
