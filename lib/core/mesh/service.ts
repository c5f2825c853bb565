import { ProviderKindConflictError, SelfConsumptionError } from './errors.ts';
import type { Relation } from './model.ts';
import type { MeshChangeStore } from './store.ts';

export type Clock = () => string;
const isoNow: Clock = () => new Date().toISOString();

/** The operator's changes to the mesh. Each marks the nodes whose declarations it changes. */
export class MeshService {
  readonly #store: MeshChangeStore;
  readonly #now: Clock;

  constructor(options: { readonly store: MeshChangeStore; readonly now?: Clock }) {
    this.#store = options.store;
    this.#now = options.now ?? isoNow;
  }

  addNode(node: string): Promise<void> {
    return this.#store.addNode(node, this.#now());
  }

  /**
   * Assigns a module; `provides` declares it a provider of that kind. A module's kind is
   * mesh-wide and fixed by its first assignment, because consumers' provisions depend on it.
   */
  async assign(node: string, module: string, provides: string | null): Promise<void> {
    const record = await this.#store.readModule(module);
    if (record && record.provides !== provides && provides !== null) {
      throw new ProviderKindConflictError(module, record.provides, provides);
    }
    await this.#store.assign(
      node,
      { module, version: record?.version ?? null, provides: record?.provides ?? provides },
      record,
    );
  }

  async consume(
    consumer: { readonly node: string; readonly module: string },
    provider: { readonly node: string; readonly module: string },
  ): Promise<void> {
    if (consumer.node === provider.node && consumer.module === provider.module) {
      throw new SelfConsumptionError(`${consumer.node}/${consumer.module}`);
    }
    const relation: Omit<Relation, 'kind'> = {
      consumerModule: consumer.module,
      providerNode: provider.node,
      providerModule: provider.module,
    };
    await this.#store.consume(consumer.node, relation);
  }
}
