import { anyHold, type HeldBack, type HoldView, holderOf, nothingHeld } from '../hold/held-back.ts';
import type { HoldReader } from '../hold/ports.ts';
import { mapLimit } from '../map-limit.ts';
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
} from '../mesh/declaration.ts';
import {
  DeclarationTooLargeError,
  MeshRaceError,
  NodeNotFoundError,
  PushContentionError,
} from '../mesh/errors.ts';
import { meshLimits } from '../mesh/limits.ts';
import type { NodeSnapshot } from '../mesh/model.ts';
import type { PushStore } from '../mesh/store.ts';
import { waitingOf } from '../mesh/waiting.ts';
import type { NodeSignal } from '../signal/channel.ts';
import { heldRelationCounterparts, type WithHolds, withHolds } from './held-relations.ts';
import type { DeliveryReader } from './ports.ts';

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
  /** Not sent: a rollout or a freeze holds it back. */
  readonly heldBack?: HeldBack;
  /**
   * Relations of its own that wait with a held-back node (held-relations.ts): sent or not, the
   * node stays marked, and the push names each.
   */
  readonly waits?: readonly HeldBack[];
};

/** How a send is asked for: by a rollout's wave (`rollout`, pairing its sends), with holds read for its batch (`view`). */
export type SendOptions = {
  readonly pairing?: boolean;
  /** The rollout whose wave sends: its own nodes are not held back from it. */
  readonly rollout?: string | undefined;
  /** What holds nodes back, read for the batch this send is part of; read for the node alone when absent. */
  readonly view?: HoldView;
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
  readonly #holds: HoldReader | undefined;

  constructor(options: {
    readonly store: PushStore;
    /** @default meshLimits.declarationBytes */
    readonly maxDeclarationBytes?: number;
    readonly mint?: Partial<MintDetails>;
    /** Tells the node's host, after a send committed (SignalAnnouncer: never throws). @default nothing */
    readonly announce?: (node: string, signal: NodeSignal) => Promise<unknown>;
    /** What each node was last sent: a wave pairs a provider with the consumers of the grants it drops. */
    readonly lastSent?: DeliveryReader;
    /** What holds nodes back (docs/decisions/held-back.md). @default nothing is held */
    readonly holds?: HoldReader;
  }) {
    this.#lastSent = options.lastSent;
    this.#holds = options.holds;
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
   * Composes the node and sends it when it is behind; clears its mark when it is not. A node held
   * back (a rollout's claim it has not released, a freeze) is not composed, and one whose send
   * would split a relation with a held-back node waits with it: both answered as `heldBack`,
   * their marks kept. A lost race (another push sent it, minted the same provision, or a claim
   * changed) is read again and retried. Once a send committed, the node's host is told (its
   * signal). A declaration over its size limit is never written: DeclarationTooLargeError, for
   * the push to name and go on without it.
   */
  async sendNode(node: string, options: SendOptions = {}): Promise<NodeSend> {
    let view = options.view ?? (await this.holdView([node]));
    for (let attempt = 0; attempt < attempts; attempt += 1) {
      if (attempt > 0) view = await this.holdView([node]);
      const snapshot = await this.#store.readNode(node);
      if (!snapshot) throw new NodeNotFoundError(node);
      const unsent = { node, revision: snapshot.sent?.revision ?? 0, sent: false, marked: [], pairs: [] };
      const by = holderOf(node, view, options.rollout);
      if (by) return { ...unsent, heldBack: { node, by } };
      const pure = await this.#compose(snapshot);
      const before = anyHold(view) || options.pairing ? await this.#sentBefore(snapshot) : undefined;
      const { composed, waits } = anyHold(view)
        ? await this.#withHolds(node, pure, before, view, options.rollout)
        : { composed: pure, waits: [] };
      const waiting = waits.length > 0 ? { waits } : {};
      if (!isBehind(snapshot, composed)) {
        // a node whose relation waits stays marked: the push after the hold lifts sends it whole
        if (snapshot.mark !== undefined && waits.length === 0)
          await this.#store.clearMark(node, snapshot.mark);
        return { ...unsent, ...waiting };
      }
      if (composed.held.length > 0) {
        // Its consumers mint the held grants again and mark it; a later round sends it whole.
        const consumers = [...new Set(composed.held.map((grant) => grant.consumer.node))].filter(
          (n) => n !== node,
        );
        return { ...unsent, pairs: consumers, held: composed.held };
      }
      const bytes = encoder.encode(composed.canonical).length;
      if (bytes > this.#maxDeclarationBytes)
        throw new DeclarationTooLargeError(node, bytes, this.#maxDeclarationBytes);
      const revision = (snapshot.sent?.revision ?? 0) + 1;
      const dropped = options.pairing ? (before?.grants ?? []).map((grant) => grant.consumer.node) : [];
      const waitingRelations = waitingOf(composed.declaration.waiting);
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
          ...(waits.length > 0 ? { keepMark: true } : {}),
          ...(this.#holds ? { claim: view.claims.get(node)?.rollout ?? null } : {}),
          ...(snapshot.sent?.parts ? { previousParts: snapshot.sent.parts } : {}),
          ...(waitingRelations ? { waiting: waitingRelations } : {}),
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
      return { node, revision, sent: true, marked, pairs: [...pairs], ...waiting };
    }
    throw new PushContentionError(node);
  }

  /** What holds these nodes back now: read once for a batch of sends. */
  holdView(nodes: readonly string[], known?: Pick<HoldView, 'rollouts' | 'freezes'>): Promise<HoldView> {
    return this.#holds ? this.#holds.view(nodes, known) : Promise.resolve(nothingHeld);
  }

  /** The declaration as it may be sent while nodes it is related to are held back (held-relations.ts). */
  async #withHolds(
    node: string,
    pure: Composed,
    before: Partial<Declaration> | undefined,
    view: HoldView,
    sending: string | undefined,
  ): Promise<WithHolds> {
    const others = heldRelationCounterparts(node, pure, before);
    if (others.length === 0) return { composed: pure, waits: [] };
    const theirs = await this.holdView(others, view);
    return withHolds(node, pure, before, (other) => holderOf(other, theirs, sending));
  }

  /** The declaration the node was last sent, when it was sent at all. */
  async #sentBefore(snapshot: NodeSnapshot): Promise<Partial<Declaration> | undefined> {
    if (!snapshot.sent) return undefined;
    const delivery = await this.#lastSent?.readDelivery(snapshot.node);
    return delivery?.declaration as Partial<Declaration> | undefined;
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
