import { createHash } from 'node:crypto';
import type { Labels } from '../mesh/labels.ts';
import type { Relation } from '../mesh/model.ts';
import { type RelationRef, relationName } from '../mesh/removal.ts';
import type { TestOutcome } from './file-tests.ts';
import type { DesiredMesh, LiveMesh, LiveNode, MeshFileLimits } from './mesh.ts';
import { byText, defaultLimits, providerOf } from './mesh.ts';
import {
  checkKinds,
  checkLimits,
  checkTestsAfter,
  type MassRemoval,
  massRemovalOf,
  type Tally,
} from './plan-checks.ts';
import type { Locate, MeshFileProblem } from './problems.ts';
import type { FileTest } from './schema.ts';

export type RelationChange = RelationRef & { readonly kind: string };
export type ModuleChange = {
  readonly node: string;
  readonly module: string;
  readonly provides: string | null;
};

/**
 * What an apply would do to the live mesh, computed from the file's mesh and the live one and
 * written nowhere. Every list is in canonical order, so the digest names the plan's meaning.
 * Carried out in this order: removals (relations, modules, nodes: the removal rules' order, and
 * room made under the limits first), then additions (nodes, modules, relations: a relation
 * needs its provider's assignment), then labels.
 */
export type ApplyPlan = {
  /** The live mesh's revision the plan was computed on: applying it on another is refused. */
  readonly revision: string;
  readonly prune: boolean;
  readonly add: {
    readonly nodes: ReadonlyArray<{ readonly node: string; readonly labels: Labels }>;
    readonly modules: readonly ModuleChange[];
    readonly relations: readonly RelationChange[];
  };
  /** Labels set on nodes that exist; `unset` holds drift keys, only when pruning. */
  readonly labels: ReadonlyArray<{
    readonly node: string;
    readonly set: Labels;
    readonly unset: readonly string[];
    /** What each key set or unset held before (null: it had none), so a plan says old → new. */
    readonly was?: Readonly<Record<string, string | null>>;
  }>;
  /**
   * Each module of a node that exists whose providers the apply changes: what it consumes
   * before and after (`NODE/MODULE` each, drift kept unless pruning), so a plan says old → new.
   * A view of `add.relations` and `remove.relations`, never carried out on its own.
   */
  readonly consumes: ReadonlyArray<{
    readonly node: string;
    readonly module: string;
    readonly was: readonly string[];
    readonly now: readonly string[];
  }>;
  /**
   * Each module whose version the file gives and the mesh does not hold (`was` null: never
   * upgraded): set after the apply's writes as `mesh upgrade` sets it, in a rollout with --waves.
   */
  readonly versions: ReadonlyArray<{
    readonly module: string;
    readonly was: string | null;
    readonly now: string;
  }>;
  /** Drift taken away, only when pruning, in the order the removal rules need: relations, modules, nodes. */
  readonly remove: {
    readonly relations: readonly RelationChange[];
    readonly modules: readonly ModuleChange[];
    readonly nodes: readonly string[];
  };
  /** What the live mesh holds and the file does not: left alone unless pruning, reported always. */
  readonly drift: {
    readonly nodes: readonly string[];
    readonly modules: readonly ModuleChange[];
    readonly relations: readonly RelationChange[];
    readonly labels: ReadonlyArray<{ readonly node: string; readonly keys: readonly string[] }>;
  };
  /** Provisions by name (`consumer-node/module -> provider-node/module`), never a secret. */
  readonly provisions: {
    /** Minted by the next push of each consumer: one for each relation added. */
    readonly minted: readonly string[];
    /** Withdrawn with the relations removed, from both sides. */
    readonly withdrawn: readonly string[];
  };
  /** The nodes behind once the plan is applied (those it changes and those behind already). */
  readonly behind: readonly string[];
  /** Set when the plan removes more than the guard lets through (see plan-checks.ts). */
  readonly massRemoval: MassRemoval | null;
  /** What stops the plan being applied: limits, kinds against the live mesh, a test that fails. */
  readonly problems: readonly MeshFileProblem[];
  /**
   * Each of the file's tests, in the file's order, as it holds on the mesh the apply leaves:
   * the passed ones too, so a reviewer sees what was checked (at most 100, maxFileTests).
   */
  readonly tests: readonly TestOutcome[];
  readonly digest: string;
};

export type PlanOptions = {
  /** Drift becomes removals. */
  readonly prune?: boolean;
  /** Lets a prune remove more than the guard's share. */
  readonly allowMassRemoval?: boolean;
  readonly limits?: Partial<MeshFileLimits>;
  /** The file's locations, for the problems the plan finds (from checkMeshFile). */
  readonly locate?: Locate;
  /** The file's tests, held on the mesh the apply leaves (drift kept included). */
  readonly tests?: readonly FileTest[];
};

const relationKey = (relation: Relation) => `${relation.consumerModule}>${providerOf(relation)}`;

const changeOf = (consumerNode: string, r: Relation): RelationChange => ({
  consumerNode,
  consumerModule: r.consumerModule,
  providerNode: r.providerNode,
  providerModule: r.providerModule,
  kind: r.kind,
});

/**
 * Plans an apply: one pass over the file's nodes against the live nodes by name, one over the
 * live nodes the file does not name. Each node is compared through indexes of its own lists, so
 * the cost is linear in the two meshes, with no loop over one inside a loop over the other.
 */
export function planApply(desired: DesiredMesh, live: LiveMesh, options: PlanOptions = {}): ApplyPlan {
  const prune = options.prune ?? false;
  const liveNodes = new Map<string, LiveNode>(live.nodes.map((node) => [node.node, node]));
  const add = {
    nodes: [] as ApplyPlan['add']['nodes'][number][],
    modules: [] as ModuleChange[],
    relations: [] as RelationChange[],
  };
  const labels: Array<ApplyPlan['labels'][number]> = [];
  const consumes: Array<ApplyPlan['consumes'][number]> = [];
  const drift = {
    nodes: [] as string[],
    modules: [] as ModuleChange[],
    relations: [] as RelationChange[],
    labels: [] as Array<ApplyPlan['drift']['labels'][number]>,
  };
  const tally: Tally = { liveNodes: live.nodes.length, liveRelations: 0 };

  for (const want of desired.nodes) {
    const have = liveNodes.get(want.node);
    if (!have) add.nodes.push({ node: want.node, labels: want.labels });
    else diffLabels(want.labels, have, prune, labels, drift.labels);
    const modules = diffLists(want.assignments, have?.assignments ?? [], (a) => a.module);
    for (const { module, provides } of modules.added) add.modules.push({ node: want.node, module, provides });
    for (const { module, provides } of modules.extra)
      drift.modules.push({ node: want.node, module, provides });
    const relations = diffLists(want.relations, have?.relations ?? [], relationKey);
    for (const relation of relations.added) add.relations.push(changeOf(want.node, relation));
    for (const relation of relations.extra) drift.relations.push(changeOf(want.node, relation));
    if (have && (relations.added.length > 0 || (prune && relations.extra.length > 0)))
      consumes.push(...consumesChanges(want.node, have.relations, relations, prune));
  }
  const named = new Set(desired.nodes.map((node) => node.node));
  for (const node of live.nodes) {
    tally.liveRelations += node.relations.length;
    if (named.has(node.node)) continue;
    drift.nodes.push(node.node);
    for (const { module, provides } of node.assignments)
      drift.modules.push({ node: node.node, module, provides });
    for (const relation of node.relations) drift.relations.push(changeOf(node.node, relation));
  }
  sortDrift(drift);

  const remove = prune
    ? { relations: drift.relations, modules: drift.modules, nodes: drift.nodes }
    : { relations: [], modules: [], nodes: [] };
  const removedNodes = new Set(remove.nodes);
  const behind = new Set<string>();
  for (const { node } of add.nodes) behind.add(node);
  for (const { node } of [...add.modules, ...remove.modules]) behind.add(node);
  for (const relation of add.relations) behind.add(relation.consumerNode);
  for (const relation of remove.relations) behind.add(relation.consumerNode).add(relation.providerNode);
  for (const node of live.nodes) if (node.behind) behind.add(node.node);
  for (const node of removedNodes) behind.delete(node);

  const limits = { ...defaultLimits, ...options.limits };
  const tested = checkTestsAfter({
    tests: options.tests ?? [],
    desired,
    live,
    drift: prune ? undefined : drift,
    locate: options.locate,
  });
  const problems = [
    ...checkKinds(desired, live, options.locate),
    ...checkLimits({ desired, add, drift: prune ? undefined : drift, limits, locate: options.locate }),
    ...tested.problems,
  ];
  const massRemoval = prune ? massRemovalOf(remove, tally, options.allowMassRemoval ?? false) : null;
  const plan = {
    revision: live.revision,
    prune,
    add,
    labels,
    consumes,
    versions: versionChanges(desired, live),
    remove,
    drift,
    provisions: { minted: add.relations.map(relationName), withdrawn: remove.relations.map(relationName) },
    behind: [...behind].sort(byText),
    massRemoval,
    problems,
    tests: tested.outcomes,
  };
  return { ...plan, digest: digestOfPlan(plan) };
}

function diffLabels(
  want: Labels,
  have: LiveNode,
  prune: boolean,
  labels: Array<ApplyPlan['labels'][number]>,
  drift: Array<ApplyPlan['drift']['labels'][number]>,
) {
  const set = Object.fromEntries(Object.entries(want).filter(([key, value]) => have.labels[key] !== value));
  const extra = Object.keys(have.labels)
    .filter((key) => !Object.hasOwn(want, key))
    .sort(byText);
  if (Object.keys(set).length > 0 || (prune && extra.length > 0)) {
    const unset = prune ? extra : [];
    const was = Object.fromEntries(
      [...Object.keys(set), ...unset].map((key) => [
        key,
        Object.hasOwn(have.labels, key) ? (have.labels[key] ?? null) : null,
      ]),
    );
    labels.push({ node: have.node, set, unset, was });
  }
  if (extra.length > 0) drift.push({ node: have.node, keys: extra });
}

/**
 * An existing node's modules whose providers change, each with its providers before and after:
 * after is before with the added ones, less the extra ones when pruning. Cost linear in the
 * node's relations.
 */
function consumesChanges(
  node: string,
  had: readonly Relation[],
  relations: { readonly added: readonly Relation[]; readonly extra: readonly Relation[] },
  prune: boolean,
): ApplyPlan['consumes'][number][] {
  const changed = new Set([
    ...relations.added.map((r) => r.consumerModule),
    ...(prune ? relations.extra.map((r) => r.consumerModule) : []),
  ]);
  const gone = new Set(prune ? relations.extra.map(relationKey) : []);
  const byModule = new Map<string, { was: string[]; now: string[] }>();
  const of = (module: string) => {
    const found = byModule.get(module) ?? { was: [], now: [] };
    byModule.set(module, found);
    return found;
  };
  for (const relation of had) {
    if (!changed.has(relation.consumerModule)) continue;
    const entry = of(relation.consumerModule);
    entry.was.push(providerOf(relation));
    if (!gone.has(relationKey(relation))) entry.now.push(providerOf(relation));
  }
  for (const relation of relations.added) of(relation.consumerModule).now.push(providerOf(relation));
  return [...byModule.entries()]
    .sort(([a], [b]) => byText(a, b))
    .map(([module, { was, now }]) => ({ node, module, was: was.sort(byText), now: now.sort(byText) }));
}

/** The modules whose version the file sets otherwise than the mesh holds, by name. */
function versionChanges(desired: DesiredMesh, live: LiveMesh): ApplyPlan['versions'][number][] {
  return [...(desired.versions ?? [])]
    .map(([module, now]) => ({ module, was: live.versions?.get(module) ?? null, now }))
    .filter((change) => change.was !== change.now)
    .sort((a, b) => byText(a.module, b.module));
}

const unchanged = { added: [], extra: [] } as const;

/**
 * What `want` has that `have` lacks and the other way round, by key. Lists alike in the same
 * order (a re-apply, the usual case) are found so in one pass, without building an index.
 */
function diffLists<T>(
  want: readonly T[],
  have: readonly T[],
  key: (item: T) => string,
): { readonly added: readonly T[]; readonly extra: readonly T[] } {
  if (want.length === 0 && have.length === 0) return unchanged;
  if (want.length === have.length && want.every((item, i) => key(item) === key(have[i] as T)))
    return unchanged;
  if (have.length === 0) return { added: want, extra: [] };
  const index = new Map(have.map((item) => [key(item), item]));
  const added = want.filter((item) => !index.delete(key(item)));
  return { added, extra: [...index.values()] };
}

function sortDrift(drift: {
  nodes: string[];
  modules: ModuleChange[];
  relations: RelationChange[];
  labels: Array<{ node: string }>;
}) {
  drift.nodes.sort(byText);
  drift.modules.sort((a, b) => byText(a.node, b.node) || byText(a.module, b.module));
  drift.relations.sort(
    (a, b) =>
      byText(a.consumerNode, b.consumerNode) ||
      byText(a.consumerModule, b.consumerModule) ||
      byText(`${a.providerNode}/${a.providerModule}`, `${b.providerNode}/${b.providerModule}`),
  );
  drift.labels.sort((a, b) => byText(a.node, b.node));
}

/**
 * The plan's digest: SHA-256 over one line per fact, in the plan's canonical order. Lines, not
 * canonical JSON, because sorting the keys of 50,000 small objects costs more than the plan.
 */
function digestOfPlan(plan: Omit<ApplyPlan, 'digest'>): string {
  const lines: string[] = [];
  const line = (...parts: readonly unknown[]) => lines.push(parts.join(' '));
  const labelText = (labels: Labels) =>
    Object.entries(labels)
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
  line('revision', plan.revision, plan.prune ? 'prune' : 'keep');
  for (const { node, labels } of plan.add.nodes) line('+node', node, labelText(labels));
  for (const m of plan.add.modules) line('+module', m.node, m.module, m.provides ?? '-');
  for (const r of plan.add.relations) line('+relation', relationName(r), r.kind);
  for (const l of plan.labels) line('labels', l.node, labelText(l.set), l.unset.join(','));
  for (const c of plan.consumes) line('consumes', c.node, c.module, c.was.join(','), c.now.join(','));
  for (const v of plan.versions) line('version', v.module, v.was ?? '-', v.now);
  for (const r of plan.remove.relations) line('-relation', relationName(r));
  for (const m of plan.remove.modules) line('-module', m.node, m.module);
  for (const node of plan.remove.nodes) line('-node', node);
  for (const r of plan.drift.relations) line('~relation', relationName(r));
  for (const m of plan.drift.modules) line('~module', m.node, m.module);
  for (const node of plan.drift.nodes) line('~node', node);
  for (const l of plan.drift.labels) line('~labels', l.node, l.keys.join(','));
  for (const node of plan.behind) line('behind', node);
  if (plan.massRemoval) line('mass-removal', plan.massRemoval.message);
  for (const p of plan.problems) line('problem', p.code, p.path, p.message);
  for (const t of plan.tests) line('test', t.passed ? 'passed' : 'failed', t.test);
  return createHash('sha256').update(lines.join('\n')).digest('hex');
}

/** The file and the mesh agree: nothing to add, change or remove, and no drift. */
export const planMatches = (plan: ApplyPlan) =>
  plan.add.nodes.length + plan.add.modules.length + plan.add.relations.length === 0 &&
  plan.labels.length === 0 &&
  plan.versions.length === 0 &&
  plan.drift.nodes.length +
    plan.drift.modules.length +
    plan.drift.relations.length +
    plan.drift.labels.length ===
    0;
