import type { ApplyPlan, RelationChange } from './plan.ts';

/** Names listed of each kind of change; the counts say how many there are. */
const listed = 10;

export type MovedList = { readonly count: number; readonly names: readonly string[] };

/** What moved in the mesh between two plans of one file: nodes and relations added and removed. */
export type MeshMoved = {
  readonly nodes: { readonly added: MovedList; readonly removed: MovedList };
  readonly relations: { readonly added: MovedList; readonly removed: MovedList };
};

const relationName = (r: RelationChange) =>
  `${r.consumerNode}/${r.consumerModule} -> ${r.providerNode}/${r.providerModule}`;

const bounded = (names: Iterable<string>): MovedList => {
  const all = [...new Set(names)].sort();
  return { count: all.length, names: all.slice(0, listed) };
};

/** What `a` holds and `b` does not. */
const minus = (a: readonly string[], b: readonly string[]) => {
  const held = new Set(b);
  return a.filter((name) => !held.has(name));
};

/**
 * What moved in the live mesh between the revision a saved plan was computed on and the one a
 * plan of the same file is computed on now. A plan sees every node and relation of the mesh: one
 * the file holds is to add until the mesh has it, one the file does not is drift while the mesh
 * has it. So a node the saved plan was to add and the new one is not was added since, and one
 * that was drift and no longer is was removed since; relations likewise. Bounded: counts, and
 * the first names of each.
 */
export function whatMoved(saved: ApplyPlan, now: ApplyPlan): MeshMoved {
  const nodes = (plan: ApplyPlan) => ({ add: plan.add.nodes.map((n) => n.node), drift: plan.drift.nodes });
  const relations = (plan: ApplyPlan) => ({
    add: plan.add.relations.map(relationName),
    drift: plan.drift.relations.map(relationName),
  });
  const moved = (before: { add: string[]; drift: readonly string[] }, after: typeof before) => ({
    added: bounded([...minus(before.add, after.add), ...minus(after.drift, before.drift)]),
    removed: bounded([...minus(after.add, before.add), ...minus(before.drift, after.drift)]),
  });
  return {
    nodes: moved(nodes(saved), nodes(now)),
    relations: moved(relations(saved), relations(now)),
  };
}

/** `1 node added (moved-1); 1 relation removed (web-1/nginx -> broker-1/rabbit)`, or `nothing the file names`. */
export function movedText(moved: MeshMoved): string {
  const part = (list: MovedList, what: string, how: string) =>
    list.count === 0
      ? []
      : [
          `${list.count} ${what}${list.count === 1 ? '' : 's'} ${how} (${list.names.join(', ')}${list.count > list.names.length ? `, and ${list.count - list.names.length} more` : ''})`,
        ];
  const parts = [
    ...part(moved.nodes.added, 'node', 'added'),
    ...part(moved.nodes.removed, 'node', 'removed'),
    ...part(moved.relations.added, 'relation', 'added'),
    ...part(moved.relations.removed, 'relation', 'removed'),
  ];
  return parts.length > 0
    ? parts.join('; ')
    : 'no node or relation added or removed (a module, a label or a version moved)';
}
