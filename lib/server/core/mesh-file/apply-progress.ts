import type { ApplyPlan } from './plan.ts';

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
export function nodesOf(plan: ApplyPlan): Set<string> {
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

export function progressOf(plan: ApplyPlan, touched: ReadonlySet<string>, complete: boolean): ApplyProgress {
  const remaining = complete ? [] : [...nodesOf(plan)].filter((node) => !touched.has(node)).sort();
  const some = [...touched].sort();
  return {
    touched: some.length,
    touchedNodes: some.slice(0, namedInProgress),
    remaining: remaining.length,
    remainingNodes: remaining.slice(0, namedInProgress),
  };
}
