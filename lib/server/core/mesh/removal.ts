import { HasDependentsError, ModuleNotAssignedError, RelationNotFoundError } from './errors.ts';
import type { NodeSnapshot } from './model.ts';

/** One consumer→provider relation, named by both ends. */
export type RelationRef = {
  readonly consumerNode: string;
  readonly consumerModule: string;
  readonly providerNode: string;
  readonly providerModule: string;
};

/**
 * What a removal takes away, decided from the node's snapshot before anything is written, and
 * then written in one transaction (in steps when it is larger, `firstStep`): each relation
 * withdrawn with its provision (the consumer's side) and its grant (the provider's side), each
 * assignment, the node itself if it goes, and a mark on every remaining node whose declaration
 * changes, so one push delivers them all.
 */
export type RemovalPlan = {
  readonly relations: readonly RelationRef[];
  readonly assignments: ReadonlyArray<{ readonly node: string; readonly module: string }>;
  /** Set when the node itself goes: every item of its partition, its keys, its token. */
  readonly node?: string;
  /** The nodes whose declarations this removal changes, the removed node excepted. */
  readonly marked: readonly string[];
};

export const relationName = (relation: RelationRef) =>
  `${relation.consumerNode}/${relation.consumerModule} -> ${relation.providerNode}/${relation.providerModule}`;

/** Withdraws one relation: the consumer and the provider both change. */
export function planUnconsume(consumer: NodeSnapshot, relation: RelationRef): RemovalPlan {
  const found = consumer.relations.some(
    (r) =>
      r.consumerModule === relation.consumerModule &&
      r.providerNode === relation.providerNode &&
      r.providerModule === relation.providerModule,
  );
  if (!found) {
    throw new RelationNotFoundError(
      `${relation.consumerNode}/${relation.consumerModule}`,
      `${relation.providerNode}/${relation.providerModule}`,
    );
  }
  return {
    relations: [relation],
    assignments: [],
    marked: unique([relation.consumerNode, relation.providerNode]),
  };
}

/**
 * Takes a module off a node, with the relations it consumes through. Modules that consume it
 * (it is a provider) would be left consuming nothing: refused, naming each, unless `cascade`.
 */
export function planUnassign(snapshot: NodeSnapshot, module: string, cascade: boolean): RemovalPlan {
  if (!snapshot.assignments.some((a) => a.module === module))
    throw new ModuleNotAssignedError(snapshot.node, module);
  const own = ownRelations(snapshot).filter((r) => r.consumerModule === module);
  const dependents = dependentRelations(snapshot).filter((r) => r.providerModule === module);
  if (dependents.length > 0 && !cascade)
    throw new HasDependentsError(`${snapshot.node}/${module}`, dependents.map(relationName));
  const relations = [...own, ...dependents];
  return {
    relations,
    assignments: [{ node: snapshot.node, module }],
    marked: unique([snapshot.node, ...relations.flatMap((r) => [r.consumerNode, r.providerNode])]),
  };
}

/**
 * Takes a node out of the mesh with everything it holds. Modules of other nodes that consume
 * its providers are refused, naming each, unless `cascade`; its own relations go with it.
 */
export function planRemoveNode(snapshot: NodeSnapshot, cascade: boolean): RemovalPlan {
  const own = ownRelations(snapshot);
  const dependents = dependentRelations(snapshot);
  const elsewhere = dependents.filter((r) => r.consumerNode !== snapshot.node);
  if (elsewhere.length > 0 && !cascade)
    throw new HasDependentsError(snapshot.node, elsewhere.map(relationName));
  const relations = uniqueRelations([...own, ...dependents]);
  return {
    relations,
    assignments: snapshot.assignments.map((a) => ({ node: snapshot.node, module: a.module })),
    node: snapshot.node,
    marked: unique(relations.flatMap((r) => [r.consumerNode, r.providerNode])).filter(
      (n) => n !== snapshot.node,
    ),
  };
}

/**
 * The largest first part of `plan` that is a removal on its own, for a store whose writes are
 * bounded (`fits`): relations first, since withdrawing one always leaves a consistent mesh, then
 * assignments once every relation is in, never the node itself. Every node it changes is
 * marked, `node` (the one removed from) included: should the rest not follow, a push sends each
 * what is left. Undefined when not even one relation or assignment fits.
 */
export function firstStep(
  plan: RemovalPlan,
  node: string,
  fits: (step: RemovalPlan) => boolean,
): RemovalPlan | undefined {
  const stepOf = (
    relations: readonly RelationRef[],
    assignments: RemovalPlan['assignments'],
  ): RemovalPlan => ({
    relations,
    assignments,
    marked: unique([
      node,
      ...relations.flatMap((r) => [r.consumerNode, r.providerNode]),
      ...assignments.map((a) => a.node),
    ]),
  });
  let largest: RemovalPlan | undefined;
  for (let count = 1; count <= plan.relations.length; count += 1) {
    const step = stepOf(plan.relations.slice(0, count), []);
    if (!fits(step)) return largest;
    largest = step;
  }
  for (let count = 1; count <= plan.assignments.length; count += 1) {
    const step = stepOf(plan.relations, plan.assignments.slice(0, count));
    if (!fits(step)) return largest;
    largest = step;
  }
  return largest;
}

/** What a removal carried out in steps took away, as one plan: the node, if it went, marked by none. */
export function joinSteps(steps: readonly RemovalPlan[]): RemovalPlan {
  const removed = steps.find((step) => step.node)?.node;
  return {
    relations: steps.flatMap((step) => step.relations),
    assignments: steps.flatMap((step) => step.assignments),
    ...(removed ? { node: removed } : {}),
    marked: unique(steps.flatMap((step) => step.marked)).filter((n) => n !== removed),
  };
}

const ownRelations = (snapshot: NodeSnapshot): RelationRef[] =>
  snapshot.relations.map((r) => ({
    consumerNode: snapshot.node,
    consumerModule: r.consumerModule,
    providerNode: r.providerNode,
    providerModule: r.providerModule,
  }));

const dependentRelations = (snapshot: NodeSnapshot): RelationRef[] =>
  snapshot.dependents.map((d) => ({
    consumerNode: d.consumerNode,
    consumerModule: d.consumerModule,
    providerNode: snapshot.node,
    providerModule: d.providerModule,
  }));

const unique = (nodes: readonly string[]) => [...new Set(nodes)].sort();

function uniqueRelations(relations: readonly RelationRef[]): RelationRef[] {
  return [...new Map(relations.map((r) => [relationName(r), r])).values()];
}
