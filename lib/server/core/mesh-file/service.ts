import { createHash } from 'node:crypto';
import type { Actor } from '../audit/record.ts';
import type { MeshService } from '../mesh/service.ts';
import { StoreUnavailableError } from '../unavailable.ts';
import { type ApplyProgress, progressOf } from './apply-progress.ts';
import { exportMeshFile } from './export.ts';
import { type CheckMeshFile, LastChecked } from './last-checked.ts';
import { type DesiredMesh, type LiveMesh, liveKinds } from './mesh.ts';
import { type ApplyHooks, PartlyAppliedError } from './partly-applied.ts';
import { type ApplyPlan, planApply } from './plan.ts';
import { assertApplicable, assertCurrent, PlanChangedError } from './plan-checks.ts';
import { modulesOfSlice, nodesOfSlice, sliceLeft } from './plan-slices.ts';
import {
  type DescribedRevision,
  type DescribedRevisionStore,
  type JobLedger,
  type LedgerRemoval,
  type LiveMeshReader,
  type LiveMeshReading,
  type MeshFileWriter,
  type MeshSliceReader,
  noWriteProgress,
  type WriteTally,
} from './ports.ts';
import { BadMeshFileError } from './problems.ts';
import { checkMeshFile } from './read.ts';
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

export type { ApplyProgress } from './apply-progress.ts';
export type { CheckMeshFile } from './last-checked.ts';
export type { ApplyHooks } from './partly-applied.ts';
export { PartlyAppliedError } from './partly-applied.ts';

export type ApplyOutcome = {
  readonly plan: ApplyPlan;
  /** Every write of the plan was made; when not, the rest is planned again from the mesh as it is. */
  readonly complete: boolean;
  readonly removed: { readonly relations: number; readonly modules: number; readonly nodes: number };
  readonly written: WriteTally;
  /** The nodes this part wrote facts of or removed, and those of the plan it left for the next part. */
  readonly progress: ApplyProgress;
};

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
  // the versions once the upgrades the apply asks for are taken
  const versions = new Map(live.versions ?? []);
  for (const { module, now } of plan.versions) versions.set(module, now);
  return liveRevision(desired.nodes, kinds, versions);
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
  readonly #slices: MeshSliceReader | undefined;

  constructor(options: {
    readonly reader: LiveMeshReader;
    readonly writer: MeshFileWriter;
    readonly removals: FactRemovals;
    readonly removedNode?: (node: string) => Promise<void>;
    /** Where an apply keeps the revision its file describes; without it every plan checks its file. */
    readonly described?: DescribedRevisionStore;
    /** The check of a file (checkMeshFile unless told). */
    readonly check?: CheckMeshFile;
    /**
     * Reads the nodes one slice of a job's plan writes: with it, a job keeps its plan and each
     * part carries out its slices (`applySlice`); without it, each part plans the rest again.
     */
    readonly slices?: MeshSliceReader;
  }) {
    this.#slices = options.slices;
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
      return { plan: planApply(itself, reading.mesh, { ...options, tests: last.tests ?? [] }), reading };
    }
    const checked = this.#checked.check(request.file, reading.mesh.modules);
    if (checked.problems.length > 0 || !checked.mesh || !checked.file)
      throw new BadMeshFileError(checked.problems, checked.omitted);
    const plan = planApply(checked.mesh, reading.mesh, {
      ...options,
      locate: checked.locate,
      tests: checked.file.tests ?? [],
    });
    const tests = checked.file.tests ?? [];
    const described = {
      fileDigest,
      revision: revisionDescribed(checked.mesh, reading.mesh, plan),
      ...(tests.length > 0 ? { tests } : {}),
    };
    return { plan, reading, described };
  }

  /**
   * Plans and carries the plan out: removals through the removal rules (relations, modules,
   * nodes), then the additions and labels in bulk. Nothing is written when the plan has a
   * problem, is held back by the mass-removal guard, or was saved on another revision. Under a
   * job (`hooks`), each removal is noted in the job's ledger before it is made and each
   * transaction carries its ledger item, and a failure after the job was opened is a
   * PartlyAppliedError naming it.
   */
  async apply(request: ApplyRequest, hooks: ApplyHooks = {}): Promise<ApplyOutcome> {
    const { plan, reading, described } = await this.#planned(request);
    // the plan here is of the live mesh; the request names the revision its saved plan was computed on
    if (request.revision !== undefined) assertCurrent({ revision: request.revision }, plan.revision);
    if (request.digest !== undefined && request.digest !== plan.digest)
      throw new PlanChangedError(request.digest, plan.digest);
    assertApplicable(plan);
    const ledger = hooks.ledger ?? (writes(plan) && hooks.opening ? await hooks.opening(plan) : undefined);
    return this.#carried(request, plan, reading, described, ledger);
  }

  /** Whether a job can keep its plan and carry it out slice by slice. */
  get slicing(): boolean {
    return this.#slices !== undefined;
  }

  /**
   * The plan of a job's file against the live mesh, for the job to keep (plan-slices.ts): the
   * whole mesh read once, the plan held to the same checks as an apply's, and the revision the
   * file describes kept when the plan writes, as an apply keeps it.
   */
  async planForJob(request: PlanRequest): Promise<ApplyPlan> {
    const { plan, reading, described } = await this.#planned(request);
    assertApplicable(plan);
    const kept = reading.described;
    if (
      this.#described &&
      described &&
      writes(plan) &&
      (kept?.fileDigest !== described.fileDigest || kept.revision !== described.revision)
    )
      await this.#described.keep(described);
    return plan;
  }

  /**
   * One slice of a job's kept plan carried out: its nodes and modules' records read (never the
   * whole mesh), what is there already left out (sliceLeft), the rest written as an apply writes
   * it, under the job's ledger.
   */
  async applySlice(
    slice: ApplyPlan,
    request: Pick<ApplyRequest, 'by' | 'until'>,
    ledger: JobLedger,
  ): Promise<ApplyOutcome> {
    if (!this.#slices) throw new Error('a slice of a plan needs the slice reader');
    const reading = await this.#slices.read(nodesOfSlice(slice), modulesOfSlice(slice));
    const left = sliceLeft(slice, reading.mesh.nodes);
    return this.#carried({ file: '', ...request }, left, reading, undefined, ledger);
  }

  async #carried(
    request: ApplyRequest,
    plan: ApplyPlan,
    reading: LiveMeshReading,
    described: DescribedRevision | undefined,
    ledger: JobLedger | undefined,
  ): Promise<ApplyOutcome> {
    const removed = { relations: 0, modules: 0, nodes: 0 };
    const touched = new Set<string>();
    const progress = noWriteProgress();
    const outcomeSoFar = (complete: boolean): ApplyOutcome => {
      for (const node of progress.touched) touched.add(node);
      return {
        plan,
        complete,
        removed,
        written: { transactions: progress.transactions, items: progress.items },
        progress: progressOf(plan, touched, complete),
      };
    };
    try {
      return await this.#carryOut(request, plan, reading, described, { ledger, removed, touched, progress });
    } catch (error) {
      if (ledger === undefined) throw error;
      throw new PartlyAppliedError(ledger.job, outcomeSoFar(false), error);
    }
  }

  async #carryOut(
    request: ApplyRequest,
    plan: ApplyPlan,
    reading: LiveMeshReading,
    described: DescribedRevision | undefined,
    counts: {
      readonly ledger: JobLedger | undefined;
      readonly removed: { relations: number; modules: number; nodes: number };
      readonly touched: Set<string>;
      readonly progress: ReturnType<typeof noWriteProgress>;
    },
  ): Promise<ApplyOutcome> {
    const { ledger, removed, touched, progress } = counts;
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
    const incomplete = (): ApplyOutcome => ({
      plan,
      complete: false,
      removed,
      written: { transactions: 0, items: 0 },
      progress: progressOf(plan, touched, false),
    });
    /** A removal, noted in the job's ledger first and taken back if it is refused. */
    const removing = async (removal: LedgerRemoval, remove: () => Promise<void>) => {
      await ledger?.noteRemoval(removal);
      try {
        await remove();
      } catch (error) {
        if (ledger && !(error instanceof StoreUnavailableError))
          await ledger.forgetRemoval(removal).catch(() => undefined);
        throw error;
      }
    };
    // At least one removal or transaction per request, so a loop of requests always moves on.
    const late = () => removed.relations + removed.modules + removed.nodes > 0 && Date.now() > until;
    for (const r of plan.remove.relations) {
      if (late()) return incomplete();
      const relation = {
        kind: 'relation' as const,
        consumerNode: r.consumerNode,
        consumerModule: r.consumerModule,
        providerNode: r.providerNode,
        providerModule: r.providerModule,
      };
      await removing(relation, async () => {
        await this.#removals.unconsume(
          { node: r.consumerNode, module: r.consumerModule },
          { node: r.providerNode, module: r.providerModule },
          request.by,
        );
      });
      removed.relations += 1;
      touched.add(r.consumerNode);
    }
    const goneNodes = new Set(plan.remove.nodes);
    for (const { node, module } of plan.remove.modules) {
      // A node that goes takes its modules with it, under the node's own rule.
      if (goneNodes.has(node)) continue;
      if (late()) return incomplete();
      await removing({ kind: 'module', node, module }, async () => {
        await this.#removals.unassign(node, module, false, request.by);
      });
      removed.modules += 1;
      touched.add(node);
    }
    const liveModules = new Map(reading.mesh.nodes.map((n) => [n.node, n.assignments.length]));
    for (const node of plan.remove.nodes) {
      if (late()) return incomplete();
      let modules = 0;
      await removing({ kind: 'node', node, modules: liveModules.get(node) ?? 0 }, async () => {
        modules = (await this.#removals.removeNode(node, false, request.by)).assignments.length;
      });
      removed.modules += modules;
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
      ...(ledger ? { job: ledger.job } : {}),
      progress,
    });
    for (const node of wrote) touched.add(node);
    return { plan, complete, removed, written, progress: progressOf(plan, touched, complete) };
  }
}
