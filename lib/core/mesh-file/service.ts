import { createHash } from 'node:crypto';
import type { Actor } from '../audit/record.ts';
import type { MeshService } from '../mesh/service.ts';
import { exportMeshFile } from './export.ts';
import { type DesiredMesh, type LiveMesh, liveKinds } from './mesh.ts';
import { type ApplyPlan, planApply } from './plan.ts';
import { assertApplicable, assertCurrent, PlanChangedError } from './plan-checks.ts';
import type {
  DescribedRevision,
  DescribedRevisionStore,
  LiveMeshReader,
  LiveMeshReading,
  MeshFileWriter,
  WriteTally,
} from './ports.ts';
import { BadMeshFileError } from './problems.ts';
import { type CheckedMeshFile, checkMeshFile } from './read.ts';
import { liveRevision } from './revision.ts';
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
  /** The nodes this part wrote facts of or removed, and those of the plan it left for the next part. */
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
 * The last file checked, with the live kinds it was checked against: every part of an apply job
 * applies the same file, and checking it (parsing with positions for its problems) is
 * the largest fixed cost of a request at 10,000 nodes (docs/mesh-file.md, "Figures"), paid
 * before any write. The check is pure, so the same text and kinds give the same result; and
 * the kinds only fill in the modules the file gives none, so a good file checked against other
 * kinds reads the same against these when each of its modules has here the kind it was given
 * there: the first part of an apply writes the modules' records, and the next need not check
 * again for them.
 */
class LastChecked {
  #last: { readonly file: string; readonly kinds: string; readonly checked: CheckedMeshFile } | undefined;
  readonly #check: CheckMeshFile;

  constructor(check: CheckMeshFile) {
    this.#check = check;
  }

  check(file: string, kinds: ReadonlyMap<string, string | null> | undefined): CheckedMeshFile {
    const key = JSON.stringify([...(kinds ?? [])].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    const last = this.#last;
    if (last && last.file === file && (last.kinds === key || kindsAgree(last.checked, kinds))) {
      this.#last = { ...last, kinds: key };
      return last.checked;
    }
    const checked = this.#check(file, { kinds });
    this.#last = { file, kinds: key, checked };
    return checked;
  }
}

export type CheckMeshFile = typeof checkMeshFile;

/** Whether a good file's modules each have, in `kinds`, the kind its check gave them. */
function kindsAgree(
  checked: CheckedMeshFile,
  kinds: ReadonlyMap<string, string | null> | undefined,
): boolean {
  if (checked.problems.length > 0 || checked.omitted > 0 || !checked.mesh) return false;
  for (const node of checked.mesh.nodes)
    for (const { module, provides } of node.assignments)
      if ((kinds?.get(module) ?? null) !== provides) return false;
  return true;
}

const fileDigestOf = (file: string) => createHash('sha256').update(file).digest('hex');

/** Whether carrying the plan out writes anything (drift left alone writes nothing). */
const writes = (plan: ApplyPlan) =>
  plan.add.nodes.length + plan.add.modules.length + plan.add.relations.length + plan.labels.length > 0 ||
  plan.remove.relations.length + plan.remove.modules.length + plan.remove.nodes.length > 0;

/**
 * The revision of the mesh the file asks for, as the reader would compute it once the file is
 * applied whole: the file's nodes, with the live module kinds and those the plan adds.
 */
function revisionDescribed(desired: DesiredMesh, live: LiveMesh, plan: ApplyPlan): string {
  const kinds = new Map(liveKinds(live));
  for (const { module, provides } of plan.add.modules) if (!kinds.has(module)) kinds.set(module, provides);
  return liveRevision(desired.nodes, kinds);
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
  readonly #described: DescribedRevisionStore | undefined;
  readonly #checked: LastChecked;

  constructor(options: {
    readonly reader: LiveMeshReader;
    readonly writer: MeshFileWriter;
    readonly removals: FactRemovals;
    readonly removedNode?: (node: string) => Promise<void>;
    /** Where an apply keeps the revision its file describes; without it every plan checks its file. */
    readonly described?: DescribedRevisionStore;
    /** The check of a file (checkMeshFile unless told). */
    readonly check?: CheckMeshFile;
  }) {
    this.#reader = options.reader;
    this.#writer = options.writer;
    this.#removals = options.removals;
    this.#removedNode = options.removedNode ?? (async () => {});
    this.#described = options.described;
    this.#checked = new LastChecked(options.check ?? checkMeshFile);
  }

  async export(format: MeshFileFormat): Promise<{ readonly text: string; readonly revision: string }> {
    const { mesh } = await this.#reader.read();
    return { text: exportMeshFile(mesh, format), revision: mesh.revision };
  }

  /** The plan of a file against the live mesh; BadMeshFileError with every problem when the file has any. */
  async plan(request: PlanRequest): Promise<{ readonly plan: ApplyPlan; readonly reading: LiveMeshReading }> {
    const { plan, reading } = await this.#planned(request);
    return { plan, reading };
  }

  /**
   * The plan, and the revision the file describes when it was checked. A file an apply was given
   * before, against the mesh it describes, is not checked again (at 10,000 nodes the check is
   * most of an unchanged re-apply): the mesh then holds what the file asks for, nothing more, so
   * its plan is the live mesh's against itself, with the nodes behind already.
   */
  async #planned(
    request: PlanRequest,
  ): Promise<{ plan: ApplyPlan; reading: LiveMeshReading; described?: DescribedRevision }> {
    const reading = await this.#reader.read();
    const options = { prune: request.prune ?? false, allowMassRemoval: request.allowMassRemoval ?? false };
    const fileDigest = fileDigestOf(request.file);
    const last = reading.described;
    if (last && last.fileDigest === fileDigest && last.revision === reading.mesh.revision) {
      const itself = { nodes: reading.mesh.nodes, origins: new Map() };
      return { plan: planApply(itself, reading.mesh, options), reading };
    }
    const checked = this.#checked.check(request.file, reading.mesh.modules);
    if (checked.problems.length > 0 || !checked.mesh || !checked.file)
      throw new BadMeshFileError(checked.problems, checked.omitted);
    const plan = planApply(checked.mesh, reading.mesh, {
      ...options,
      locate: checked.locate,
      tests: checked.file.tests ?? [],
    });
    const described = { fileDigest, revision: revisionDescribed(checked.mesh, reading.mesh, plan) };
    return { plan, reading, described };
  }

  /**
   * Plans and carries the plan out: removals through the removal rules (relations, modules,
   * nodes), then the additions and labels in bulk. Nothing is written when the plan has a
   * problem, is held back by the mass-removal guard, or was saved on another revision.
   */
  async apply(request: ApplyRequest): Promise<ApplyOutcome> {
    const { plan, reading, described } = await this.#planned(request);
    if (request.revision !== undefined) assertCurrent(plan, request.revision);
    if (request.digest !== undefined && request.digest !== plan.digest)
      throw new PlanChangedError(request.digest, plan.digest);
    assertApplicable(plan);
    // Kept before the writes, once per file: a fact about the file, true whether or not this part
    // finishes. An apply that writes nothing keeps nothing, so a re-apply writes nothing.
    const kept = reading.described;
    if (
      this.#described &&
      described &&
      writes(plan) &&
      (kept?.fileDigest !== described.fileDigest || kept.revision !== described.revision)
    )
      await this.#described.keep(described);
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
