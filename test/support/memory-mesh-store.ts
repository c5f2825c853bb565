import type { Declaration } from '../../lib/server/core/mesh/declaration.ts';
import {
  AlreadyAssignedError,
  DuplicateRelationError,
  LimitReachedError,
  MeshRaceError,
  ModuleNotAssignedError,
  ModuleNotFoundError,
  NodeExistsError,
  NodeNotFoundError,
  NotAProviderError,
  ProvisionNotMintedError,
  RelationNotFoundError,
} from '../../lib/server/core/mesh/errors.ts';
import { meshLimits } from '../../lib/server/core/mesh/limits.ts';
import {
  type Assignment,
  type Dependent,
  type NodeSnapshot,
  type Provision,
  type Relation,
  relationKey,
  type SealingKey,
} from '../../lib/server/core/mesh/model.ts';
import type { ModuleVersions } from '../../lib/server/core/mesh/ports.ts';
import type { RelationRef, RemovalPlan } from '../../lib/server/core/mesh/removal.ts';
import type {
  MeshChangeStore,
  MeshRemovals,
  ModuleRecord,
  PushStore,
  SendWrite,
} from '../../lib/server/core/mesh/store.ts';
import type { NodeStatus, StatusReader } from '../../lib/server/core/views/ports.ts';
import { testSealing } from './sealing.ts';

type NodeState = {
  assignments: Map<string, Assignment>;
  relations: Map<string, Relation>;
  dependents: Map<string, Dependent>;
  provisions: Map<string, Provision>;
  grants: Map<string, Provision>;
  sent: NodeSnapshot['sent'];
  mark: number | undefined;
  sealingKey: SealingKey | undefined;
};

export { testSealing };

/**
 * The mesh store, module versions and status in memory, with the same conditions as the
 * DynamoDB adapters: for unit and property tests of the core. Each method checks every
 * condition before it changes anything, as a transaction would.
 */
export class MemoryMeshStore
  implements MeshChangeStore, MeshRemovals, PushStore, ModuleVersions, StatusReader
{
  readonly nodes = new Map<string, NodeState>();
  readonly modules = new Map<string, ModuleRecord>();
  /** Requests a DynamoDB store would make, for tests that reason about cost. */
  requests = 0;
  readonly #enrolEveryNode: boolean;

  /** `enrolEveryNode` (default true): each node added has a completed enrolment with `testSealing`'s key. */
  constructor(options: { readonly enrolEveryNode?: boolean } = {}) {
    this.#enrolEveryNode = options.enrolEveryNode ?? true;
  }

  /** Records a completed enrolment (or, with undefined, takes it away), as the enrolment adapters would. */
  setSealingKey(node: string, key: SealingKey | undefined): void {
    const state = this.nodes.get(node);
    if (!state) throw new NodeNotFoundError(node);
    state.sealingKey = key;
  }

  async readSealingKeys(nodes: readonly string[]): Promise<ReadonlyMap<string, SealingKey>> {
    this.requests += 1;
    const keys = new Map<string, SealingKey>();
    for (const node of nodes) {
      const key = this.nodes.get(node)?.sealingKey;
      if (key) keys.set(node, key);
    }
    return keys;
  }

  async addNode(node: string): Promise<void> {
    this.requests += 1;
    if (this.nodes.has(node)) throw new NodeExistsError(node);
    this.nodes.set(node, {
      assignments: new Map(),
      relations: new Map(),
      dependents: new Map(),
      provisions: new Map(),
      grants: new Map(),
      sent: undefined,
      mark: 1,
      sealingKey: this.#enrolEveryNode ? testSealing.key : undefined,
    });
  }

  async readModule(module: string): Promise<ModuleRecord | undefined> {
    this.requests += 1;
    return this.modules.get(module);
  }

  async assign(node: string, assignment: Assignment, module: ModuleRecord | undefined): Promise<void> {
    this.requests += 1;
    const state = this.nodes.get(node);
    if (!state) throw new NodeNotFoundError(node);
    const current = this.modules.get(assignment.module);
    if (
      (module === undefined) !== (current === undefined) ||
      (module && current && (module.version !== current.version || module.provides !== current.provides))
    ) {
      throw new MeshRaceError('model');
    }
    if (state.assignments.has(assignment.module)) throw new AlreadyAssignedError(node, assignment.module);
    if (state.assignments.size >= meshLimits.modulesPerNode)
      throw new LimitReachedError(node, 'modulesPerNode', meshLimits.modulesPerNode, 'modules assigned');
    if (!current) {
      this.modules.set(assignment.module, {
        module: assignment.module,
        version: null,
        provides: assignment.provides,
      });
    }
    state.assignments.set(assignment.module, { ...assignment });
    this.#mark(node);
  }

  async consume(node: string, relation: Omit<Relation, 'kind'>): Promise<void> {
    this.requests += 2;
    const consumer = this.nodes.get(node);
    if (!consumer) throw new NodeNotFoundError(node);
    if (!consumer.assignments.has(relation.consumerModule))
      throw new ModuleNotAssignedError(node, relation.consumerModule);
    const provider = this.nodes.get(relation.providerNode);
    if (!provider) throw new NodeNotFoundError(relation.providerNode);
    const offered = provider.assignments.get(relation.providerModule);
    if (!offered) throw new ModuleNotAssignedError(relation.providerNode, relation.providerModule);
    if (!offered.provides) throw new NotAProviderError(relation.providerNode, relation.providerModule);
    const key = relationKey(relation);
    if (consumer.relations.has(key)) {
      throw new DuplicateRelationError(
        `${node}/${relation.consumerModule}`,
        `${relation.providerNode}/${relation.providerModule}`,
      );
    }
    if (consumer.relations.size >= meshLimits.consumesPerNode)
      throw new LimitReachedError(node, 'consumesPerNode', meshLimits.consumesPerNode, 'relations consumed');
    if (provider.dependents.size >= meshLimits.consumersPerNode)
      throw new LimitReachedError(
        relation.providerNode,
        'consumersPerNode',
        meshLimits.consumersPerNode,
        'consumers of its providers',
      );
    consumer.relations.set(key, { ...relation, kind: offered.provides });
    provider.dependents.set(dependentKey(node, relation), {
      consumerNode: node,
      consumerModule: relation.consumerModule,
      providerModule: relation.providerModule,
    });
    this.#mark(node);
  }

  async remove(node: string, plan: (snapshot: NodeSnapshot) => RemovalPlan): Promise<RemovalPlan> {
    const snapshot = await this.readNode(node);
    if (!snapshot) throw new NodeNotFoundError(node);
    const decided = plan(snapshot);
    for (const relation of decided.relations) {
      const consumer = this.nodes.get(relation.consumerNode);
      const provider = this.nodes.get(relation.providerNode);
      consumer?.relations.delete(relationKey(relation));
      consumer?.provisions.delete(relationKey(relation));
      provider?.dependents.delete(dependentKey(relation.consumerNode, relation));
      provider?.grants.delete(grantKey(relation));
    }
    for (const { node: owner, module } of decided.assignments)
      this.nodes.get(owner)?.assignments.delete(module);
    if (decided.node) {
      this.nodes.delete(decided.node);
      this.deliveries.delete(decided.node);
    }
    for (const marked of decided.marked) this.#mark(marked);
    return decided;
  }

  async rotateProvision(relation: RelationRef, rotatedAt: string): Promise<void> {
    this.requests += 2;
    const consumer = this.nodes.get(relation.consumerNode);
    const names = [
      `${relation.consumerNode}/${relation.consumerModule}`,
      `${relation.providerNode}/${relation.providerModule}`,
    ] as const;
    if (!consumer?.relations.has(relationKey(relation))) throw new RelationNotFoundError(...names);
    const provision = consumer.provisions.get(relationKey(relation));
    if (!provision) throw new ProvisionNotMintedError(...names);
    consumer.provisions.set(relationKey(relation), { ...provision, rotationAsked: true });
    const grants = this.nodes.get(relation.providerNode)?.grants;
    const grant = grants?.get(grantKey(relation));
    if (grant) grants?.set(grantKey(relation), { ...grant, rotationAsked: true, mintedAt: rotatedAt });
    for (const node of new Set([relation.consumerNode, relation.providerNode])) this.#mark(node);
  }

  async setModuleVersion(
    module: string,
    version: string,
    _by?: unknown,
    options: { readonly carriers?: boolean; readonly continues?: boolean } = {},
  ): Promise<{
    readonly carriers: readonly string[];
    readonly previous: string | null;
    readonly more: boolean;
    readonly overtaken?: boolean;
  }> {
    this.requests += 2;
    const record = this.modules.get(module);
    if (!record) throw new ModuleNotFoundError(module);
    const previous = record.version;
    if (options.continues && previous !== version)
      return { carriers: [], previous, more: false, overtaken: true };
    this.modules.set(module, { ...record, version });
    const carriers: string[] = [];
    for (const [node, state] of this.nodes) {
      const assignment = state.assignments.get(module);
      if (!assignment) continue;
      carriers.push(node);
      if (assignment.version === version || options.carriers === false) continue;
      this.requests += 1;
      state.assignments.set(module, { ...assignment, version });
      this.#mark(node);
    }
    return { carriers, previous, more: false };
  }

  async isKnown(module: string): Promise<boolean> {
    this.requests += 1;
    return this.modules.has(module);
  }

  async moveCarriers(module: string, version: string, nodes: readonly string[]): Promise<void> {
    for (const node of nodes) {
      const state = this.nodes.get(node);
      const assignment = state?.assignments.get(module);
      if (!state || !assignment || assignment.version === version) continue;
      this.requests += 1;
      state.assignments.set(module, { ...assignment, version });
      this.#mark(node);
    }
  }

  async readNode(node: string): Promise<NodeSnapshot | undefined> {
    this.requests += 1;
    const state = this.nodes.get(node);
    if (!state) return undefined;
    return structuredClone({
      node,
      assignments: [...state.assignments.values()],
      relations: [...state.relations.values()],
      dependents: [...state.dependents.values()],
      provisions: [...state.provisions.values()],
      grants: [...state.grants.values()],
      sent: state.sent,
      mark: state.mark,
      sealingKey: state.sealingKey,
    });
  }

  async send(write: SendWrite): Promise<void> {
    this.requests += 1;
    const state = this.nodes.get(write.node);
    if (!state) throw new NodeNotFoundError(write.node);
    if (state.sent?.revision !== write.previousRevision) throw new MeshRaceError('revision', state.sent);
    for (const mint of write.mints) {
      const provider = this.nodes.get(mint.providerNode);
      const stored = state.provisions.get(relationKey(mint));
      const granted = provider?.grants.get(grantKey(mint));
      const asRead = (item: Provision | undefined) =>
        mint.replaces === undefined
          ? item === undefined
          : item !== undefined && item.generation === mint.replaces;
      if (!provider || !asRead(stored) || !asRead(granted)) throw new MeshRaceError('mint');
    }
    if (write.mark !== undefined && state.mark !== write.mark) throw new MeshRaceError('mark');
    state.sent = { revision: write.revision, digest: write.digest, sentAt: write.sentAt };
    this.deliveries.set(write.node, write.canonical);
    for (const { replaces: _, ...mint } of write.mints) {
      // Each side keeps its own copy only, as the two items in the table do.
      state.provisions.set(relationKey(mint), { ...mint, sealed: { consumer: mint.sealed.consumer } });
      this.nodes
        .get(mint.providerNode)
        ?.grants.set(grantKey(mint), { ...mint, sealed: { provider: mint.sealed.provider } });
    }
    for (const provider of new Set(write.mints.map((m) => m.providerNode))) {
      if (provider !== write.node) this.#mark(provider);
    }
    if (write.mark !== undefined && !write.keepMark) state.mark = undefined;
  }

  /** What each node was last sent, as canonical JSON. */
  readonly deliveries = new Map<string, string>();

  async clearMark(node: string, mark: number): Promise<void> {
    this.requests += 1;
    const state = this.nodes.get(node);
    if (state && state.mark === mark) state.mark = undefined;
  }

  async listMarked(): Promise<string[]> {
    this.requests += 1;
    return [...this.nodes].filter(([, state]) => state.mark !== undefined).map(([node]) => node);
  }

  async listNodes(): Promise<string[]> {
    this.requests += 1;
    return [...this.nodes.keys()];
  }

  async status(): Promise<NodeStatus[]> {
    this.requests += 1 + this.nodes.size;
    return [...this.nodes.keys()].map((node) => this.#statusOf(node));
  }

  #statusOf(node: string): NodeStatus {
    const state = this.nodes.get(node) as NodeState;
    return {
      node,
      enrolled: false,
      enrolledAt: null,
      sentRevision: state.sent?.revision ?? null,
      sentAt: state.sent?.sentAt ?? null,
      appliedRevision: null,
      appliedAt: null,
      reportState: null,
      behind: state.mark !== undefined,
      online: null,
      lastHeard: null,
    };
  }

  /** Marks a node possibly behind, as the sealing follow-up of an enrolment does (tests). */
  markNode(node: string): void {
    this.#mark(node);
  }

  #mark(node: string) {
    const state = this.nodes.get(node);
    if (state) state.mark = (state.mark ?? 0) + 1;
  }
}

const grantKey = (p: Pick<Provision, 'providerModule' | 'consumerNode' | 'consumerModule'>) =>
  `${p.providerModule}<${p.consumerNode}/${p.consumerModule}`;
const dependentKey = (consumerNode: string, r: Pick<Relation, 'consumerModule' | 'providerModule'>) =>
  `${r.providerModule}<${consumerNode}/${r.consumerModule}`;

/**
 * Each consumer's provision, as last sent, whose provider (a node that still exists) was not sent
 * the matching grant: what a wave, or a hold, must never add. A node removed and added again was
 * never sent: the removed one's declaration went with it.
 */
export function splitRelations(store: MemoryMeshStore): string[] {
  const sent = (node: string) => {
    const canonical = store.nodes.get(node)?.sent ? store.deliveries.get(node) : undefined;
    return canonical ? (JSON.parse(canonical) as Declaration) : undefined;
  };
  const split: string[] = [];
  for (const node of store.nodes.keys()) {
    for (const p of sent(node)?.provisions ?? []) {
      if (p.provider.node === node || !store.nodes.has(p.provider.node)) continue;
      const grants = sent(p.provider.node)?.grants ?? [];
      const matched = grants.some(
        (g) =>
          g.module === p.provider.module &&
          g.consumer.node === node &&
          g.consumer.module === p.module &&
          g.fingerprint === p.fingerprint,
      );
      if (!matched) split.push(`${node}/${p.module} -> ${p.provider.node}/${p.provider.module}`);
    }
  }
  return split;
}
