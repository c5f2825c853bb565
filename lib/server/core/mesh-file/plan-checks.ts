import { MeshError, ProviderKindConflictError } from '../mesh/errors.ts';
import type { Relation } from '../mesh/model.ts';
import { runTests, type TestOutcome } from './file-tests.ts';
import {
  type DesiredMesh,
  type LiveMesh,
  liveKinds,
  type MeshAssignment,
  type MeshFileLimits,
  type MeshNode,
  type Origin,
} from './mesh.ts';
import type { ApplyPlan, ModuleChange, RelationChange } from './plan.ts';
import { BadMeshFileError, type Locate, type MeshFileProblem, problemAt } from './problems.ts';
import type { FileTest } from './schema.ts';

/** What a plan is checked with beyond the file itself: the live mesh's kinds, limits with drift kept, the prune guard. */

const nowhere: Locate = () => ({ line: 1, column: 1 });
const originOf = (desired: DesiredMesh, node: string): Origin => desired.origins.get(node) ?? [];

/**
 * A module's kind is mesh-wide and fixed by its first assignment, live or not: the file may not
 * give it another, in the words `mesh assign` refuses it with.
 */
export function checkKinds(desired: DesiredMesh, live: LiveMesh, locate = nowhere): MeshFileProblem[] {
  const problem = problemAt(locate);
  const kinds = liveKinds(live);
  const problems: MeshFileProblem[] = [];
  const seen = new Set<string>();
  for (const node of desired.nodes)
    for (const { module, provides } of node.assignments) {
      if (seen.has(module)) continue;
      seen.add(module);
      const existing = kinds.get(module);
      if (existing === undefined || provides === null || provides === existing) continue;
      const at = [...originOf(desired, node.node), 'modules', module, 'provides'];
      const message = new ProviderKindConflictError(module, existing, provides).message;
      problems.push(problem('provider-kind-conflict', at, `${message} (a module's kind is mesh-wide)`));
    }
  return problems;
}

type KeptDrift = { readonly modules: readonly ModuleChange[]; readonly relations: readonly RelationChange[] };

/**
 * Each node the plan adds to, held to its limits as it will be: what the file gives it and the
 * drift an apply without prune leaves on it. The file alone was checked when it was read.
 */
export function checkLimits(input: {
  readonly desired: DesiredMesh;
  readonly add: ApplyPlan['add'];
  readonly drift: KeptDrift | undefined;
  readonly limits: MeshFileLimits;
  readonly locate: Locate | undefined;
}): MeshFileProblem[] {
  const { desired, add, drift, limits } = input;
  if (add.modules.length + add.relations.length === 0) return [];
  const problem = problemAt(input.locate ?? nowhere);
  const nodes = new Map(desired.nodes.map((node) => [node.node, node]));
  const count = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
  const keptModules = new Map<string, number>();
  const keptConsumes = new Map<string, number>();
  const keptConsumers = new Map<string, number>();
  for (const { node } of drift?.modules ?? []) count(keptModules, node);
  for (const relation of drift?.relations ?? []) {
    count(keptConsumes, relation.consumerNode);
    count(keptConsumers, relation.providerNode);
  }
  const consumers = new Map<string, number>();
  if (add.relations.length > 0)
    for (const node of desired.nodes)
      for (const relation of node.relations) count(consumers, relation.providerNode);

  const problems: MeshFileProblem[] = [];
  const check = (node: string, limit: keyof MeshFileLimits, own: number, kept: number, what: string) => {
    const max = limits[limit];
    if (own + kept <= max) return;
    const drifted = kept > 0 ? `; ${kept} of them are drift, which a prune removes` : '';
    problems.push(
      problem(
        'limit-exceeded',
        originOf(desired, node),
        `node ${node} would have ${own + kept} ${what}, over its limit of ${max} (${limit})${drifted}`,
        true,
      ),
    );
  };
  for (const node of new Set(add.modules.map((m) => m.node)))
    check(
      node,
      'modulesPerNode',
      nodes.get(node)?.assignments.length ?? 0,
      keptModules.get(node) ?? 0,
      'modules',
    );
  for (const node of new Set(add.relations.map((r) => r.consumerNode)))
    check(
      node,
      'consumesPerNode',
      nodes.get(node)?.relations.length ?? 0,
      keptConsumes.get(node) ?? 0,
      'providers consumed',
    );
  for (const node of new Set(add.relations.map((r) => r.providerNode)))
    check(node, 'consumersPerNode', consumers.get(node) ?? 0, keptConsumers.get(node) ?? 0, 'consumers');
  return problems;
}

/**
 * The file's tests, held on the mesh as the apply leaves it: what the file asks for and, without
 * prune, the drift kept beside it (a relation the file dropped can still break `mustNotConsume`).
 */
export function checkTestsAfter(input: {
  readonly tests: readonly FileTest[];
  readonly desired: DesiredMesh;
  readonly live: LiveMesh;
  readonly drift: (KeptDrift & { readonly nodes: readonly string[] }) | undefined;
  readonly locate: Locate | undefined;
}): { problems: MeshFileProblem[]; outcomes: TestOutcome[] } {
  const { tests, desired, live, drift } = input;
  if (tests.length === 0) return { problems: [], outcomes: [] };
  const kept = new Map<string, { assignments: MeshAssignment[]; relations: Relation[] }>();
  const keptOf = (node: string) => {
    const found = kept.get(node) ?? { assignments: [], relations: [] };
    kept.set(node, found);
    return found;
  };
  const gone = new Set(drift?.nodes ?? []);
  for (const { node, module, provides } of drift?.modules ?? [])
    if (!gone.has(node)) keptOf(node).assignments.push({ module, provides });
  for (const { consumerNode, ...relation } of drift?.relations ?? [])
    if (!gone.has(consumerNode)) keptOf(consumerNode).relations.push(relation);
  const nodes: MeshNode[] = desired.nodes.map((node) => {
    const extra = kept.get(node.node);
    if (!extra) return node;
    return {
      ...node,
      assignments: [...node.assignments, ...extra.assignments],
      relations: [...node.relations, ...extra.relations],
    };
  });
  for (const node of live.nodes) if (gone.has(node.node)) nodes.push(node);
  return runTests(tests, nodes, input.locate ?? nowhere);
}

/** The live mesh's size, for the guard's shares. */
export type Tally = { liveNodes: number; liveRelations: number };

/** A prune that takes this share or more of the nodes or relations is a mistake until told otherwise (Argo CD's prune guard). */
export const massRemovalShare = 0.1;

export type MassRemoval = {
  readonly nodes: { readonly removed: number; readonly of: number };
  readonly relations: { readonly removed: number; readonly of: number };
  readonly allowed: boolean;
  readonly message: string;
};

export function massRemovalOf(
  remove: ApplyPlan['remove'],
  tally: Tally,
  allowed: boolean,
): MassRemoval | null {
  const nodes = { removed: remove.nodes.length, of: tally.liveNodes };
  const relations = { removed: remove.relations.length, of: tally.liveRelations };
  const over = (part: { removed: number; of: number }) => part.removed > part.of * massRemovalShare;
  const everything = nodes.of > 0 && nodes.removed === nodes.of;
  if (!over(nodes) && !over(relations) && !everything) return null;
  const message = `this prune removes ${nodes.removed} of ${nodes.of} nodes and ${relations.removed} of ${relations.of} relations, more than ${massRemovalShare * 100}%${everything ? ' (every node)' : ''}: ${allowed ? 'allowed' : 'refused unless mass removal is allowed (--allow-mass-removal)'}`;
  return { nodes, relations, allowed, message };
}

/** A prune that would remove too much, refused: the counts are in the message and the fields. */
export class MassRemovalError extends MeshError {
  override name = 'MassRemovalError';
  readonly removal: MassRemoval;
  constructor(removal: MassRemoval, options?: ErrorOptions) {
    super(removal.message, options);
    this.removal = removal;
  }
}

/** The mesh moved since the plan was computed: the plan is refused, and a new one computed. */
export class StalePlanError extends MeshError {
  override name = 'StalePlanError';
  readonly planned: string;
  readonly current: string;
  constructor(planned: string, current: string, options?: ErrorOptions) {
    super(
      `the plan was computed on mesh revision ${planned}, and the mesh is at ${current} now: plan again`,
      options,
    );
    this.planned = planned;
    this.current = current;
  }
}

/** The mesh is at the plan's revision, and the file (or its options) now plans something else. */
export class PlanChangedError extends MeshError {
  override name = 'PlanChangedError';
  readonly planned: string;
  readonly current: string;
  constructor(planned: string, current: string, options?: ErrorOptions) {
    super(
      `the saved plan has digest ${planned}, and the file now plans ${current}: the file or its options changed; plan again`,
      options,
    );
    this.planned = planned;
    this.current = current;
  }
}

/** Throws what stops a plan: the file's problems first, then the mass-removal guard. */
export function assertApplicable(plan: ApplyPlan): void {
  if (plan.problems.length > 0) throw new BadMeshFileError(plan.problems);
  if (plan.massRemoval && !plan.massRemoval.allowed) throw new MassRemovalError(plan.massRemoval);
}

/** Throws StalePlanError when the live mesh is no longer at the plan's revision. */
export function assertCurrent(plan: Pick<ApplyPlan, 'revision'>, revision: string): void {
  if (plan.revision !== revision) throw new StalePlanError(plan.revision, revision);
}
