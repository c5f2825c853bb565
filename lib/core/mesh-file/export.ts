import { stringify } from 'yaml';
import { byText, compareRelations, type MeshNode, providerOf } from './mesh.ts';
import type { MeshFile, ModuleEntry } from './schema.ts';
import type { MeshFileFormat } from './source.ts';

/**
 * The file that reproduces a mesh: every node written out (groups are the writer's shorthand,
 * not the mesh's), nodes, modules, labels and consumes in code-unit order, an empty list or map
 * left out. The same mesh always gives the same bytes, so export → apply → export is a fixpoint.
 */
export function exportMeshFile(
  mesh: { readonly nodes: readonly MeshNode[] },
  format: MeshFileFormat = 'yaml',
): string {
  const file = canonicalFile(mesh.nodes);
  return format === 'json' ? `${JSON.stringify(file, null, 2)}\n` : stringify(file, { lineWidth: 0 });
}

export function canonicalFile(nodes: readonly MeshNode[]): MeshFile {
  const written: NonNullable<MeshFile['nodes']> = {};
  for (const node of [...nodes].sort((a, b) => byText(a.node, b.node))) {
    const modules = new Map<string, { provides: string | null; consumes: string[] }>();
    for (const { module, provides } of node.assignments) modules.set(module, { provides, consumes: [] });
    for (const relation of [...node.relations].sort(compareRelations)) {
      const entry = modules.get(relation.consumerModule) ?? { provides: null, consumes: [] };
      entry.consumes.push(providerOf(relation));
      modules.set(relation.consumerModule, entry);
    }
    const entry: { labels?: Record<string, string>; modules?: Record<string, ModuleEntry> } = {};
    const labels = Object.entries(node.labels).sort(([a], [b]) => byText(a, b));
    if (labels.length > 0) entry.labels = Object.fromEntries(labels);
    if (modules.size > 0)
      entry.modules = Object.fromEntries(
        [...modules]
          .sort(([a], [b]) => byText(a, b))
          .map(([module, { provides, consumes }]) => [
            module,
            {
              ...(provides === null ? {} : { provides }),
              ...(consumes.length === 0 ? {} : { consumes }),
            },
          ]),
      );
    written[node.node] = entry;
  }
  return { version: 1, nodes: written };
}
