import type { Relation } from '../mesh/model.ts';
import { canonicalNode, type LiveMesh, type LiveNode, type MeshAssignment } from './mesh.ts';
import type { ApplyPlan } from './plan.ts';

/**
 * A plan carried out on a mesh in memory: what the store's writes must amount to. The tests use
 * it to hold the round trip (export → apply to an empty mesh → export); a dry run may too.
 */
export function applyInMemory(live: LiveMesh, plan: ApplyPlan, revision: string): LiveMesh {
  type Draft = {
    labels: Map<string, string>;
    assignments: Map<string, MeshAssignment>;
    relations: Map<string, Relation>;
  };
  const key = (r: Pick<Relation, 'consumerModule' | 'providerNode' | 'providerModule'>) =>
    `${r.consumerModule}>${r.providerNode}/${r.providerModule}`;
  const drafts = new Map<string, Draft>();
  for (const node of live.nodes)
    drafts.set(node.node, {
      labels: new Map(Object.entries(node.labels)),
      assignments: new Map(node.assignments.map((a) => [a.module, a])),
      relations: new Map(node.relations.map((r) => [key(r), r])),
    });
  const draft = (node: string) => {
    const found = drafts.get(node);
    if (!found) throw new Error(`the plan names node ${node}, which the mesh does not hold`);
    return found;
  };
  for (const relation of plan.remove.relations) draft(relation.consumerNode).relations.delete(key(relation));
  for (const { node, module } of plan.remove.modules) draft(node).assignments.delete(module);
  for (const node of plan.remove.nodes) drafts.delete(node);
  for (const { node, labels } of plan.add.nodes)
    drafts.set(node, {
      labels: new Map(Object.entries(labels)),
      assignments: new Map(),
      relations: new Map(),
    });
  for (const { node, set, unset } of plan.labels) {
    const labels = draft(node).labels;
    for (const name of unset) labels.delete(name);
    for (const [name, value] of Object.entries(set)) labels.set(name, value);
  }
  for (const { node, module, provides } of plan.add.modules)
    draft(node).assignments.set(module, { module, provides });
  for (const { consumerNode, ...relation } of plan.add.relations)
    draft(consumerNode).relations.set(key(relation), relation);

  const behind = new Set(plan.behind);
  const nodes: LiveNode[] = [...drafts].map(([node, d]) => ({
    ...canonicalNode({
      node,
      labels: Object.fromEntries(d.labels),
      assignments: [...d.assignments.values()],
      relations: [...d.relations.values()],
    }),
    behind: behind.has(node),
  }));
  const kinds = live.modules && new Map(live.modules);
  for (const { module, provides } of plan.add.modules)
    if (kinds && !kinds.has(module)) kinds.set(module, provides);
  return { revision, nodes, ...(kinds ? { modules: kinds } : {}) };
}
