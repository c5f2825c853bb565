import { jsonBytes, type ListPath, listAt, withList } from '../answer-pages.ts';
import { MeshError } from '../mesh/errors.ts';
import type { ApplyPlan } from './plan.ts';
import type { ApplyOutcome } from './service.ts';

/**
 * The export and the plan a page at a time (docs/mesh-file.md, "Pages"): each page is cut from
 * the whole answer computed again on the mesh as it is, so every page must be of one revision.
 */

/** A plan's lists, in the order its pages carry them; every other field is on every page. */
export const planListPaths: readonly ListPath[] = [
  ['add', 'nodes'],
  ['add', 'modules'],
  ['add', 'relations'],
  ['labels'],
  ['consumes'],
  ['remove', 'relations'],
  ['remove', 'modules'],
  ['remove', 'nodes'],
  ['drift', 'nodes'],
  ['drift', 'modules'],
  ['drift', 'relations'],
  ['drift', 'labels'],
  ['provisions', 'minted'],
  ['provisions', 'withdrawn'],
  ['behind'],
  ['problems'],
];

/** A page of the export asked on a mesh other than the first page's: the pages would not join into one file. */
export class ExportMovedError extends MeshError {
  override name = 'ExportMovedError';
  readonly exported: string;
  readonly current: string;
  constructor(exported: string, current: string, options?: ErrorOptions) {
    super(
      `the export's first page was of mesh revision ${exported}, and the mesh is at ${current} now: export again`,
      options,
    );
    this.exported = exported;
    this.current = current;
  }
}

/** How many items each of a plan's lists holds, by its path (`add.nodes`, `behind`). */
export type PlanCounts = Readonly<Record<string, number>>;

export const planCountsOf = (plan: ApplyPlan): PlanCounts =>
  Object.fromEntries(planListPaths.map((path) => [path.join('.'), listAt(plan, path).length]));

/** An apply's answer: its plan cut to what fits `budget` when it would not, with the plan's counts. */
export type BoundedApplyOutcome = ApplyOutcome & {
  readonly planCounts: PlanCounts;
  /** The plan's lists were cut: `planCounts` says how long they are; `mesh apply --plan` shows them whole. */
  readonly planCut: boolean;
};

/** Names of each list an apply's answer keeps at first; halved until the answer fits. */
const keptAtFirst = 1000;

/**
 * The answer of one apply request within a page: an apply cannot be asked for its second page
 * (the apply job's next part plans from the mesh the first one changed), so when the plan does not fit,
 * each of its lists keeps its first names (as many as fit, the same number for every list) and
 * `planCounts` says how long each is. `POST /mesh/plan` shows the plan whole, page by page.
 */
export function boundedOutcome(outcome: ApplyOutcome, budget: number): BoundedApplyOutcome {
  const planCounts = planCountsOf(outcome.plan);
  const whole = { ...outcome, planCounts, planCut: false };
  if (jsonBytes(whole) <= budget) return whole;
  for (let kept = keptAtFirst; ; kept = Math.floor(kept / 2)) {
    const plan = planListPaths.reduce(
      (cut, path) => withList(cut, path, listAt(cut, path).slice(0, kept)),
      outcome.plan,
    );
    const bounded = { ...whole, plan, planCut: true };
    if (kept === 0 || jsonBytes(bounded) <= budget) return bounded;
  }
}
