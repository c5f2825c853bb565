import { createHash } from 'node:crypto';
import { canonicalNode, type LiveNode, type MeshNode } from './mesh.ts';

/**
 * The live mesh's revision: a digest of what a file can say about it (nodes, labels, modules,
 * relations, each module's kind and version), as read. A digest rather than a counter, so no one item is
 * written by every change to the mesh (a hot key for every `assign` and `consume`); marks and
 * sends are left out, so a push between a plan and its apply does not make the plan stale.
 */
export function liveRevision(
  nodes: readonly MeshNode[],
  kinds: ReadonlyMap<string, string | null>,
  versions: ReadonlyMap<string, string | null> = new Map(),
): string {
  const hash = createHash('sha256');
  const sorted = [...nodes].sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
  for (const node of sorted) {
    const { labels, assignments, relations } = canonicalNode(node);
    hash.update(`node ${node.node} ${Object.entries(labels).join(';')}\n`);
    for (const a of assignments) hash.update(` module ${a.module} ${a.provides ?? '-'}\n`);
    for (const r of relations)
      hash.update(` consumes ${r.consumerModule} ${r.providerNode}/${r.providerModule} ${r.kind}\n`);
  }
  for (const [module, kind] of [...kinds].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    hash.update(`kind ${module} ${kind ?? '-'}\n`);
  // a module never upgraded adds nothing, so a mesh without versions keeps its revision
  for (const [module, version] of [...versions].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    if (version !== null) hash.update(`version ${module} ${version}\n`);
  return hash.digest('hex').slice(0, 16);
}

/** Nodes in canonical order, each canonical: what a reader of the store hands the plan. */
export const canonicalLive = (nodes: readonly LiveNode[]): LiveNode[] =>
  nodes
    .map((node) => ({ ...canonicalNode(node), ...(node.behind ? { behind: true } : {}) }))
    .sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
