import type { Labels } from '../mesh/labels.ts';
import { nodesOf } from './apply-progress.ts';
import type { LiveNode } from './mesh.ts';
import type { ApplyPlan, ModuleChange, RelationChange } from './plan.ts';

/**
 * A job's plan cut in slices (docs/mesh-file.md, "An apply as a job"): each slice is a plan of
 * its own, of at most `nodesPerSlice` nodes, and carried out in order the slices do what the
 * whole plan does. The order is the plan's: removals (relations, modules, nodes); then the added
 * nodes that provide a relation added, with their modules, and modules added to nodes that
 * exist; then every other added node with its modules and the relations it consumes; then the
 * relations left (their consumers and providers written by then); then labels. A slice names
 * every node it writes, so a part reads only those nodes (and its modules' records) to carry it
 * out.
 */
export const defaultNodesPerSlice = 1_000;

const emptyPlan = (plan: ApplyPlan): ApplyPlan => ({
  revision: plan.revision,
  prune: plan.prune,
  add: { nodes: [], modules: [], relations: [] },
  labels: [],
  consumes: [],
  versions: [],
  remove: { relations: [], modules: [], nodes: [] },
  drift: { nodes: [], modules: [], relations: [], labels: [] },
  provisions: { minted: [], withdrawn: [] },
  behind: [],
  massRemoval: null,
  problems: [],
  tests: [],
  digest: plan.digest,
});

type Piece = {
  readonly node: string;
  readonly into: (slice: Mutable) => void;
};

type Mutable = {
  add: { nodes: ApplyPlan['add']['nodes'][number][]; modules: ModuleChange[]; relations: RelationChange[] };
  labels: ApplyPlan['labels'][number][];
  remove: { relations: RelationChange[]; modules: ModuleChange[]; nodes: string[] };
};

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    let group = groups.get(k);
    if (!group) {
      group = [];
      groups.set(k, group);
    }
    group.push(item);
  }
  return groups;
}

/**
 * Each stage's pieces, one per node, in the plan's order. A stage ends its slice: no slice holds
 * two stages, so a slice never needs what a later piece of its own writes.
 */
function stagesOf(plan: ApplyPlan): Piece[][] {
  const goneNodes = new Set(plan.remove.nodes);
  const addedNodes = new Map(plan.add.nodes.map((added) => [added.node, added]));
  const providers = new Set(plan.add.relations.map((r) => r.providerNode));
  const modulesOf = groupBy(plan.add.modules, (m) => m.node);
  const consumes = groupBy(plan.add.relations, (r) => r.consumerNode);
  const consumers = plan.add.nodes.filter(({ node }) => !providers.has(node)).map(({ node }) => node);
  const consumerSet = new Set(consumers);
  const firstStage = [
    ...plan.add.nodes.filter(({ node }) => providers.has(node)).map(({ node }) => node),
    ...[...modulesOf.keys()].filter((node) => !addedNodes.has(node)),
  ];
  const byNode = <T>(
    items: readonly T[],
    key: (item: T) => string,
    put: (slice: Mutable, item: T[]) => void,
  ) =>
    [...groupBy(items, key)].map(([node, group]) => ({ node, into: (slice: Mutable) => put(slice, group) }));
  return [
    byNode(
      plan.remove.relations,
      (r) => r.consumerNode,
      (s, g) => s.remove.relations.push(...g),
    ),
    byNode(
      plan.remove.modules.filter((m) => !goneNodes.has(m.node)),
      (m) => m.node,
      (s, g) => s.remove.modules.push(...g),
    ),
    plan.remove.nodes.map((node) => ({ node, into: (s: Mutable) => void s.remove.nodes.push(node) })),
    firstStage.map((node) => ({
      node,
      into: (s: Mutable) => {
        const added = addedNodes.get(node);
        if (added) s.add.nodes.push(added);
        s.add.modules.push(...(modulesOf.get(node) ?? []));
      },
    })),
    consumers.map((node) => ({
      node,
      into: (s: Mutable) => {
        s.add.nodes.push(addedNodes.get(node) as ApplyPlan['add']['nodes'][number]);
        s.add.modules.push(...(modulesOf.get(node) ?? []));
        s.add.relations.push(...(consumes.get(node) ?? []));
      },
    })),
    byNode(
      plan.add.relations.filter((r) => !consumerSet.has(r.consumerNode)),
      (r) => r.consumerNode,
      (s, g) => s.add.relations.push(...g),
    ),
    plan.labels.map((labels) => ({ node: labels.node, into: (s: Mutable) => void s.labels.push(labels) })),
  ];
}

/** The plan's slices, in the order they are carried out; none when the plan writes nothing. */
export function slicesOf(plan: ApplyPlan, nodesPerSlice = defaultNodesPerSlice): ApplyPlan[] {
  const slices: ApplyPlan[] = [];
  for (const stage of stagesOf(plan))
    for (let at = 0; at < stage.length; at += nodesPerSlice) {
      const slice: Mutable = {
        add: { nodes: [], modules: [], relations: [] },
        labels: [],
        remove: { relations: [], modules: [], nodes: [] },
      };
      for (const piece of stage.slice(at, at + nodesPerSlice)) piece.into(slice);
      slices.push({ ...emptyPlan(plan), add: slice.add, labels: slice.labels, remove: slice.remove });
    }
  return slices;
}

/** The module records a slice's writes are conditioned on. */
export const modulesOfSlice = (slice: ApplyPlan): string[] => [
  ...new Set(slice.add.modules.map((m) => m.module)),
];

/** The nodes a slice reads: those it writes, and its relations' providers are not read (their writes carry their own conditions). */
export const nodesOfSlice = (slice: ApplyPlan): string[] => [...nodesOf(slice)].sort();

const sameLabels = (a: Labels, b: Labels) => {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => a[key] === b[key]);
};

/**
 * What is left of a slice against its nodes as they are now: what a part before it (or a part
 * that died after some transactions) wrote is done, and not written twice. A node the slice adds
 * that exists (written by an earlier try, or by a `mesh node add` since the plan) is left with
 * the file's labels set on it, as a plan made now would; the writes left keep their conditions,
 * so a change since the plan that contradicts them refuses the part, as any apply's does.
 */
export function sliceLeft(slice: ApplyPlan, live: readonly LiveNode[]): ApplyPlan {
  const nodes = new Map(live.map((node) => [node.node, node]));
  const hasModule = (node: string, module: string) =>
    nodes.get(node)?.assignments.some((a) => a.module === module) ?? false;
  const hasRelation = (r: RelationChange) =>
    nodes
      .get(r.consumerNode)
      ?.relations.some(
        (x) =>
          x.consumerModule === r.consumerModule &&
          x.providerNode === r.providerNode &&
          x.providerModule === r.providerModule,
      ) ?? false;
  const labels: ApplyPlan['labels'][number][] = [];
  for (const change of slice.labels) {
    const now = nodes.get(change.node)?.labels ?? {};
    const after: Record<string, string> = { ...now };
    for (const key of change.unset) delete after[key];
    Object.assign(after, change.set);
    if (!sameLabels(now, after)) labels.push(change);
  }
  for (const added of slice.add.nodes) {
    const there = nodes.get(added.node);
    if (!there || sameLabels(there.labels, added.labels)) continue;
    const unset = slice.prune ? Object.keys(there.labels).filter((key) => !(key in added.labels)) : [];
    labels.push({ node: added.node, set: added.labels, unset });
  }
  return {
    ...slice,
    remove: {
      relations: slice.remove.relations.filter(hasRelation),
      modules: slice.remove.modules.filter((m) => hasModule(m.node, m.module)),
      nodes: slice.remove.nodes.filter((node) => nodes.has(node)),
    },
    add: {
      nodes: slice.add.nodes.filter(({ node }) => !nodes.has(node)),
      modules: slice.add.modules.filter((m) => !hasModule(m.node, m.module)),
      relations: slice.add.relations.filter((r) => !hasRelation(r)),
    },
    labels,
  };
}
