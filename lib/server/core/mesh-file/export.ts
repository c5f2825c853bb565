import { byText, compareRelations, type MeshNode, providerOf } from './mesh.ts';
import type { MeshFile, ModuleEntry } from './schema.ts';
import type { MeshFileFormat } from './source.ts';

/**
 * The file that reproduces a mesh: every node written out (groups are the writer's shorthand,
 * not the mesh's), nodes, modules, labels and consumes in code-unit order, an empty list or map
 * left out. The same mesh always gives the same bytes, so export → apply → export is a fixpoint.
 */
export function exportMeshFile(
  mesh: { readonly nodes: readonly MeshNode[]; readonly versions?: ReadonlyMap<string, string | null> },
  format: MeshFileFormat = 'yaml',
): string {
  const file = canonicalFile(mesh.nodes, mesh.versions);
  return format === 'json' ? `${JSON.stringify(file, null, 2)}\n` : yamlText(file);
}

/** Words some YAML reader takes for a boolean or null when bare (YAML 1.1 had more than 1.2). */
const notStrings = /^(?:y|n|yes|no|on|off|true|false|null)$/i;

/**
 * A scalar bare when every YAML reader takes it for a string (a letter first, then name
 * characters, no reserved word), else double-quoted: JSON's quoting is YAML's.
 */
const scalar = (text: string) =>
  /^[A-Za-z][A-Za-z0-9._/-]*$/.test(text) && !notStrings.test(text) ? text : JSON.stringify(text);

/**
 * The file as block YAML, written directly: its shape is fixed and its scalars are names, so
 * writing it is a few lines, and the yaml package's general emitter took seconds at 10,000 nodes.
 * The round trip through the parser is held by test/unit/mesh-file/export.property.test.ts.
 */
function yamlText(file: MeshFile): string {
  const lines = [`version: ${file.version}`];
  const modules = Object.entries(file.modules ?? {});
  if (modules.length > 0) lines.push('modules:');
  for (const [module, settings] of modules)
    lines.push(`  ${scalar(module)}:`, `    version: ${scalar(settings.version)}`);
  const nodes = Object.entries(file.nodes ?? {});
  if (nodes.length === 0) lines.push('nodes: {}');
  else lines.push('nodes:');
  for (const [node, entry] of nodes) {
    const labels = Object.entries(entry?.labels ?? {});
    const modules = Object.entries(entry?.modules ?? {});
    if (labels.length === 0 && modules.length === 0) {
      lines.push(`  ${scalar(node)}: {}`);
      continue;
    }
    lines.push(`  ${scalar(node)}:`);
    if (labels.length > 0) lines.push('    labels:');
    for (const [key, value] of labels) lines.push(`      ${scalar(key)}: ${scalar(value)}`);
    if (modules.length > 0) lines.push('    modules:');
    for (const [module, body] of modules) {
      if (!body?.provides && !body?.consumes) {
        lines.push(`      ${scalar(module)}: {}`);
        continue;
      }
      lines.push(`      ${scalar(module)}:`);
      if (body.provides) lines.push(`        provides: ${scalar(body.provides)}`);
      if (body.consumes)
        lines.push('        consumes:', ...body.consumes.map((ref) => `          - ${scalar(ref)}`));
    }
  }
  return `${lines.join('\n')}\n`;
}

/**
 * The mesh as a file: each node, and each module's version (a module some node carries and
 * that was upgraded at least once: one no node carries cannot be in a file).
 */
export function canonicalFile(
  nodes: readonly MeshNode[],
  versions: ReadonlyMap<string, string | null> = new Map(),
): MeshFile {
  const written: NonNullable<MeshFile['nodes']> = {};
  const carried = new Set<string>();
  for (const node of [...nodes].sort((a, b) => byText(a.node, b.node))) {
    const modules = new Map<string, { provides: string | null; consumes: string[] }>();
    for (const { module, provides } of node.assignments) {
      modules.set(module, { provides, consumes: [] });
      carried.add(module);
    }
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
  const set = [...versions]
    .filter((entry): entry is [string, string] => entry[1] !== null && carried.has(entry[0]))
    .sort(([a], [b]) => byText(a, b));
  return {
    version: 1,
    ...(set.length > 0
      ? { modules: Object.fromEntries(set.map(([module, version]) => [module, { version }])) }
      : {}),
    nodes: written,
  };
}
