import type { Labels } from '../mesh/labels.ts';
import { meshLimits } from '../mesh/limits.ts';
import type { Relation } from '../mesh/model.ts';

/**
 * The mesh as the file describes it and as the store holds it, in one shape, so a plan is the
 * difference of two values of it and an export is one value of it written down.
 */
export type MeshAssignment = {
  readonly module: string;
  /** The module's kind when it is a provider; a kind is mesh-wide, set by the first assignment. */
  readonly provides: string | null;
};

export type MeshNode = {
  readonly node: string;
  readonly labels: Labels;
  readonly assignments: readonly MeshAssignment[];
  /** What this node's modules consume (lib/server/core/mesh/model.ts), the consumer being this node. */
  readonly relations: readonly Relation[];
};

/** Where a node is defined in the file: `['nodes', 'web-1']` or `['groups', 'web', 'nodes']`. */
export type Origin = readonly (string | number)[];

/** The mesh a file asks for, every list in canonical order (`canonicalNode`). */
export type DesiredMesh = {
  readonly nodes: readonly MeshNode[];
  readonly origins: ReadonlyMap<string, Origin>;
  /** Each module's version the file gives (its top-level `modules`); a module it leaves out keeps its own. */
  readonly versions?: ReadonlyMap<string, string>;
};

export type LiveNode = MeshNode & {
  /** Marked possibly behind already: not sent since its declaration last changed. */
  readonly behind?: boolean;
};

/** The mesh as the store holds it now, read at one revision (opaque: the store's own counter). */
export type LiveMesh = {
  readonly revision: string;
  readonly nodes: readonly LiveNode[];
  /**
   * Every module's mesh-wide kind, including modules no node holds any more (the store keeps
   * their record, and their kind with it). Taken from the assignments when absent.
   */
  readonly modules?: ReadonlyMap<string, string | null>;
  /** Every module's version (null: never upgraded), as `mesh upgrade` set it. */
  readonly versions?: ReadonlyMap<string, string | null>;
};

/** The per-node limits a file is held to; another issue may raise one, so they are a parameter. */
export type MeshFileLimits = {
  readonly modulesPerNode: number;
  readonly consumesPerNode: number;
  readonly consumersPerNode: number;
};

export const defaultLimits: MeshFileLimits = {
  modulesPerNode: meshLimits.modulesPerNode,
  consumesPerNode: meshLimits.consumesPerNode,
  consumersPerNode: meshLimits.consumersPerNode,
};

/** Names sort by code unit, never by locale, so the order is the same on every machine. */
export const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export const providerOf = (relation: Pick<Relation, 'providerNode' | 'providerModule'>) =>
  `${relation.providerNode}/${relation.providerModule}`;

export const compareRelations = (a: Relation, b: Relation) =>
  byText(a.consumerModule, b.consumerModule) || byText(providerOf(a), providerOf(b));

export const sortedLabels = (labels: Labels): Labels =>
  Object.fromEntries(Object.entries(labels).sort(([a], [b]) => byText(a, b)));

/** The node with its labels, assignments and relations in canonical order. */
export const canonicalNode = (node: MeshNode): MeshNode => ({
  node: node.node,
  labels: sortedLabels(node.labels),
  assignments: [...node.assignments]
    .map(({ module, provides }) => ({ module, provides }))
    .sort((a, b) => byText(a.module, b.module)),
  relations: [...node.relations]
    .map(({ consumerModule, providerNode, providerModule, kind }) => ({
      consumerModule,
      providerNode,
      providerModule,
      kind,
    }))
    .sort(compareRelations),
});

/** Each module's kind as the live mesh holds it. */
export function liveKinds(live: LiveMesh): ReadonlyMap<string, string | null> {
  if (live.modules) return live.modules;
  const kinds = new Map<string, string | null>();
  for (const node of live.nodes)
    for (const { module, provides } of node.assignments) if (!kinds.has(module)) kinds.set(module, provides);
  return kinds;
}
