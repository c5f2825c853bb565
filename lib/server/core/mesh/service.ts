import { type Actor, nodeEntry } from '../audit/record.ts';
import type { Clock } from '../ports.ts';
import { ProviderKindConflictError, SelfConsumptionError } from './errors.ts';
import type { Relation } from './model.ts';
import {
  planRemoveNode,
  planUnassign,
  planUnconsume,
  type RelationRef,
  type RemovalPlan,
} from './removal.ts';
import type { Labels, MeshChangeStore, MeshRemovals } from './store.ts';

type NodeModule = { readonly node: string; readonly module: string };

/** The operator's changes to the mesh. Each marks the nodes whose declarations it changes. */
export class MeshService {
  readonly #store: MeshChangeStore;
  readonly #removals: MeshRemovals;
  readonly #now: Clock;

  constructor(options: {
    readonly store: MeshChangeStore;
    readonly removals: MeshRemovals;
    readonly now?: Clock;
  }) {
    this.#store = options.store;
    this.#removals = options.removals;
    this.#now = options.now ?? (() => new Date());
  }

  addNode(node: string, labels: Labels, by: Actor): Promise<void> {
    return this.#store.addNode(node, this.#now().toISOString(), labels, nodeEntry(by, 'node.add', node));
  }

  /**
   * Assigns a module; `provides` declares it a provider of that kind. A module's kind is
   * mesh-wide and fixed by its first assignment, because consumers' provisions depend on it.
   */
  async assign(node: string, module: string, provides: string | null, by: Actor): Promise<void> {
    const record = await this.#store.readModule(module);
    if (record && record.provides !== provides && provides !== null) {
      throw new ProviderKindConflictError(module, record.provides, provides);
    }
    await this.#store.assign(
      node,
      { module, version: record?.version ?? null, provides: record?.provides ?? provides },
      record,
      nodeEntry(by, 'module.assign', node, { target: `node:${node}/module:${module}` }),
    );
  }

  async consume(
    consumer: { readonly node: string; readonly module: string },
    provider: { readonly node: string; readonly module: string },
    by: Actor,
  ): Promise<void> {
    if (consumer.node === provider.node && consumer.module === provider.module) {
      throw new SelfConsumptionError(`${consumer.node}/${consumer.module}`);
    }
    const relation: Omit<Relation, 'kind'> = {
      consumerModule: consumer.module,
      providerNode: provider.node,
      providerModule: provider.module,
    };
    await this.#store.consume(
      consumer.node,
      relation,
      nodeEntry(by, 'relation.consume', consumer.node, { target: relationTarget(consumer, provider) }),
    );
  }

  /** Withdraws a relation: the provision from the consumer, the grant from the provider; both are marked. */
  unconsume(consumer: NodeModule, provider: NodeModule, by: Actor): Promise<RemovalPlan> {
    const relation = refOf(consumer, provider);
    const target = relationTarget(consumer, provider);
    return this.#removals.remove(
      consumer.node,
      (snapshot) => planUnconsume(snapshot, relation),
      nodeEntry(by, 'relation.unconsume', consumer.node, { target }),
    );
  }

  /** Takes a module off a node (see planUnassign for what goes with it). */
  unassign(node: string, module: string, cascade: boolean, by: Actor): Promise<RemovalPlan> {
    return this.#removals.remove(
      node,
      (snapshot) => planUnassign(snapshot, module, cascade),
      nodeEntry(by, 'module.unassign', node, {
        target: `node:${node}/module:${module}`,
        details: { cascade },
      }),
    );
  }

  /** Takes a node out of the mesh with its token and host identity (see planRemoveNode). */
  removeNode(node: string, cascade: boolean, by: Actor): Promise<RemovalPlan> {
    return this.#removals.remove(
      node,
      (snapshot) => planRemoveNode(snapshot, cascade),
      nodeEntry(by, 'node.remove', node, { details: { cascade } }),
    );
  }

  /**
   * Asks a new secret for a provision; both nodes are marked, so one push of the consumer mints
   * it, sealed to both sides, and delivers both sides.
   */
  rotate(consumer: NodeModule, provider: NodeModule, by: Actor): Promise<void> {
    const entry = nodeEntry(by, 'relation.rotate', consumer.node, {
      target: relationTarget(consumer, provider),
    });
    return this.#store.rotateProvision(refOf(consumer, provider), this.#now().toISOString(), entry);
  }
}

const relationTarget = (consumer: NodeModule, provider: NodeModule) =>
  `node:${consumer.node}/module:${consumer.module}/consumes:${provider.node}/${provider.module}`;

const refOf = (consumer: NodeModule, provider: NodeModule): RelationRef => ({
  consumerNode: consumer.node,
  consumerModule: consumer.module,
  providerNode: provider.node,
  providerModule: provider.module,
});
