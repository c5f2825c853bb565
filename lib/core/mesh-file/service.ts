import type { Actor } from '../audit/record.ts';
import type { MeshService } from '../mesh/service.ts';
import { exportMeshFile } from './export.ts';
import { type ApplyPlan, planApply } from './plan.ts';
import { assertApplicable, assertCurrent, PlanChangedError } from './plan-checks.ts';
import type { LiveMeshReader, LiveMeshReading, MeshFileWriter, WriteTally } from './ports.ts';
import { BadMeshFileError } from './problems.ts';
import { type CheckedMeshFile, checkMeshFile } from './read.ts';
import type { MeshFileFormat } from './source.ts';

export type PlanRequest = {
  readonly file: string;
  readonly prune?: boolean;
  readonly allowMassRemoval?: boolean;
};

export type ApplyRequest = PlanRequest & {
  /** A saved plan's revision: the apply is refused (StalePlanError) when the mesh moved since. */
  readonly revision?: string;
  /** A saved plan's digest: refused (PlanChangedError) when the file now plans something else. */
  readonly digest?: string;
  /** Epoch ms after which no new transaction starts; the answer then says `complete: false`. */
  readonly until?: number;
  /** Who applies: each removal and the apply's writes are recorded as theirs (docs/audit.md). */
  readonly by: Actor;
};

export type ApplyOutcome = {
  readonly plan: ApplyPlan;
  /** Every write of the plan was made; when not, the rest is planned again from the mesh as it is. */
  readonly complete: boolean;
  readonly removed: { readonly relations: number; readonly modules: number; readonly nodes: number };
  readonly written: WriteTally;
  /** The nodes this request wrote facts of or removed, and those of the plan it left for the next. */
  readonly progress: ApplyProgress;
};

/** How far an apply got, named within bounds: counts, and the first few nodes by name. */
export type ApplyProgress = {
  readonly touched: number;
  readonly touchedNodes: readonly string[];
  readonly remaining: number;
  readonly remainingNodes: readonly string[];
};

/** Nodes named in a progress answer; the counts say how many more. */
const namedInProgress = 10;

/** Every node whose items the plan writes or removes. */
function nodesOf(plan: ApplyPlan): Set<string> {
  return new Set([
    ...plan.remove.relations.map((r) => r.consumerNode),
    ...plan.remove.modules.map((m) => m.node),
    ...plan.remove.nodes,
    ...plan.add.nodes.map((n) => n.node),
    ...plan.add.modules.map((m) => m.node),
    ...plan.add.relations.map((r) => r.consumerNode),
    ...plan.labels.map((l) => l.node),
  ]);
}

function progressOf(plan: ApplyPlan, touched: ReadonlySet<string>, complete: boolean): ApplyProgress {
  const remaining = complete ? [] : [...nodesOf(plan)].filter((node) => !touched.has(node)).sort();
  const some = [...touched].sort();
  return {
    touched: some.length,
    touchedNodes: some.slice(0, namedInProgress),
    remaining: remaining.length,
    remainingNodes: remaining.slice(0, namedInProgress),
  };
}

/**
 * The last file checked, with the live kinds it was checked against: `mesh apply` sends the same
 * file with every part of an apply, and checking it (parsing with positions for its problems) is
 * the largest fixed cost of a request at 10,000 nodes (docs/mesh-file.md, "Figures"), paid
 * before any write. The check is pure, so the same text and kinds give the same result.
 */
class LastChecked {
  #last: { readonly file: string; readonly kinds: string; readonly checked: CheckedMeshFile } | undefined;

  check(file: string, kinds: ReadonlyMap<string, string | null> | undefined): CheckedMeshFile {
    const key = JSON.stringify([...(kinds ?? [])].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    if (this.#last && this.#last.file === file && this.#last.kinds === key) return this.#last.checked;
    const checked = checkMeshFile(file, { kinds });
    this.#last = { file, kinds: key, checked };
    return checked;
  }
}

/** What removals an apply's prune makes: the operator's own, one fact each, under their rules. */
export type FactRemovals = Pick<MeshService, 'unconsume' | 'unassign' | 'removeNode'>;

/**
 * The mesh file against the live mesh (docs/mesh-file.md): export it, plan a file against it,
 * apply a plan. The live mesh is read whole once per call; the plan is the core's.
 */
export class MeshFileService {
  readonly #reader: LiveMeshReader;
  readonly #writer: MeshFileWriter;
  readonly #removals: FactRemovals;
  /** Called for each node a prune removes, after its removal (its host's signal). */
  readonly #removedNode: (node: string) => Promise<void>;
  readonly #checked = new LastChecked();

  constructor(options: {
    readonly reader: LiveMeshReader;
    readonly writer: MeshFileWriter;
    readonly removals: FactRemovals;
    readonly removedNode?: (node: string) => Promise<void>;
  }) {
    this.#reader = options.reader;
    this.#writer = options.writer;
    this.#removals = options.removals;
    this.#removedNode = options.removedNode ?? (async () => {});
  }

  async export(format: MeshFileFormat): Promise<{ readonly text: string; readonly revision: string }> {
    const { mesh } = await this.#reader.read();
    return { text: exportMeshFile(mesh, format), revision: mesh.revision };
  }

  /** The plan of a file against the live mesh; BadMeshFileError with every problem when the file has any. */
  async plan(request: PlanRequest): Promise<{ readonly plan: ApplyPlan; readonly reading: LiveMeshReading }> {
    const reading = await this.#reader.read();
    const checked = this.#checked.check(request.file, reading.mesh.modules);
    if (checked.problems.length > 0 || !checked.mesh || !checked.file)
      throw new BadMeshFileError(checked.problems, checked.omitted);
    const plan = planApply(checked.mesh, reading.mesh, {
      prune: request.prune ?? false,
      allowMassRemoval: request.allowMassRemoval ?? false,
      locate: checked.locate,
      tests: checked.file.tests ?? [],
    });
    return { plan, reading };
  }

  /**
   * Plans and carries the plan out: removals through the removal rules (relations, modules,
   * nodes), then the additions and labels in bulk. Nothing is written when the plan has a
   * problem, is held back by the mass-removal guard, or was saved on another revision.
   */
  async apply(request: ApplyRequest): Promise<ApplyOutcome> {
    const { plan, reading } = await this.plan(request);
    if (request.revision !== undefined) assertCurrent(plan, request.revision);
    if (request.digest !== undefined && request.digest !== plan.digest)
      throw new PlanChangedError(request.digest, plan.digest);
    assertApplicable(plan);
    const until = request.until ?? Infinity;
    const removed = { relations: 0, modules: 0, nodes: 0 };
    const touched = new Set<string>();
    const incomplete = (): ApplyOutcome => ({
      plan,
      complete: false,
      removed,
      written: { transactions: 0, items: 0 },
      progress: progressOf(plan, touched, false),
    });
    // At least one removal or transaction per request, so a loop of requests always moves on.
    const late = () => removed.relations + removed.modules + removed.nodes > 0 && Date.now() > until;
    for (const r of plan.remove.relations) {
      if (late()) return incomplete();
      await this.#removals.unconsume(
        { node: r.consumerNode, module: r.consumerModule },
        { node: r.providerNode, module: r.providerModule },
        request.by,
      );
      removed.relations += 1;
      touched.add(r.consumerNode);
    }
    const goneNodes = new Set(plan.remove.nodes);
    for (const { node, module } of plan.remove.modules) {
      // A node that goes takes its modules with it, under the node's own rule.
      if (goneNodes.has(node)) continue;
      if (late()) return incomplete();
      await this.#removals.unassign(node, module, false, request.by);
      removed.modules += 1;
      touched.add(node);
    }
    for (const node of plan.remove.nodes) {
      if (late()) return incomplete();
      const done = await this.#removals.removeNode(node, false, request.by);
      removed.modules += done.assignments.length;
      removed.nodes += 1;
      touched.add(node);
      await this.#removedNode(node);
    }
    const {
      complete,
      touched: wrote,
      ...written
    } = await this.#writer.write(plan, reading, {
      until: late() ? -Infinity : until,
      by: request.by,
    });
    for (const node of wrote) touched.add(node);
    return { plan, complete, removed, written, progress: progressOf(plan, touched, complete) };
  }
}
