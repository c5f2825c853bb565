import type { Labels } from '../mesh/labels.ts';
import type { Relation } from '../mesh/model.ts';
import { providerKind } from '../names.ts';
import {
  byText,
  compareRelations,
  type DesiredMesh,
  type MeshAssignment,
  type MeshFileLimits,
  type MeshNode,
  type Origin,
  sortedLabels,
} from './mesh.ts';
import { type Locate, type MeshFileProblem, pathText, problemAt } from './problems.ts';
import { expandPattern } from './ranges.ts';
import { type MeshFile, type ModuleEntry, providerRef } from './schema.ts';

export type ExpandOptions = {
  readonly limits: MeshFileLimits;
  /** The most nodes one file may hold: groups are cheap to write and costly to apply. */
  readonly maxNodes: number;
  /**
   * Kinds the live mesh already gives modules: a module the file names without `provides` is
   * then a provider of that kind, as `mesh assign` without `--provides` makes it.
   */
  readonly kinds?: ReadonlyMap<string, string | null>;
};

/** One place in the file that defines nodes: an entry of `nodes` (one node) or a group (many). */
type Source = {
  readonly path: Origin;
  readonly names: readonly string[];
  /** Where each name comes from: the entry, or the group's pattern that made it. */
  readonly madeBy: readonly Origin[];
  readonly labels: Labels;
  readonly modules: ReadonlyArray<readonly [string, ModuleEntry]>;
  readonly moduleNames: ReadonlySet<string>;
};

/**
 * Turns a file into the mesh it asks for, checking what no schema can: each node defined once,
 * each relation naming a provider in the file, one kind per module, each node within its limits.
 * Groups are checked once, not once per node: their 800 nodes share one set of modules.
 */
export function expandMeshFile(
  file: MeshFile,
  locate: Locate,
  options: ExpandOptions,
): { mesh: DesiredMesh; problems: MeshFileProblem[] } {
  const problem = problemAt(locate);
  const problems: MeshFileProblem[] = [];
  const sources = sourcesOf(file, options.maxNodes, problems, problem);

  const owner = new Map<string, Source>();
  for (const source of sources)
    for (const [i, name] of source.names.entries()) {
      const first = owner.get(name);
      if (first)
        problems.push(
          problem(
            'duplicate-node',
            source.madeBy[i] ?? source.path,
            `node ${name} is defined twice: in ${pathText(first.path)} and in ${pathText(source.path)}`,
            source.path[0] === 'nodes',
          ),
        );
      else owner.set(name, source);
    }

  const kinds = kindsOf(sources, options.kinds, problems, problem);
  const consumers = new Map<string, number>();
  const nodes: MeshNode[] = [];
  const origins = new Map<string, Origin>();
  for (const source of sources) {
    const assignments: MeshAssignment[] = source.modules
      .map(([module]) => ({ module, provides: kinds.get(module) ?? null }))
      .sort((a, b) => byText(a.module, b.module));
    const relations: Relation[] = [];
    for (const [module, entry] of source.modules) {
      const seen = new Set<string>();
      for (const [i, ref] of (entry.consumes ?? []).entries()) {
        const at = [...source.path, 'modules', module, 'consumes', i];
        if (!providerRef.safeParse(ref).success) continue; // reported by the schema
        const [providerNode = '', providerModule = ''] = ref.split('/');
        if (seen.has(ref)) {
          problems.push(problem('duplicate-relation', at, `${module} lists ${ref} twice`));
          continue;
        }
        seen.add(ref);
        const provider = owner.get(providerNode);
        if (!provider) {
          problems.push(problem('unknown-provider', at, `${ref}: no node ${providerNode} in the file`));
          continue;
        }
        if (!provider.moduleNames.has(providerModule)) {
          problems.push(
            problem(
              'unknown-provider',
              at,
              `${ref}: node ${providerNode} has no module ${providerModule} in the file`,
            ),
          );
          continue;
        }
        const kind = kinds.get(providerModule) ?? null;
        if (kind === null) {
          problems.push(
            problem(
              'not-a-provider',
              at,
              `${ref}: module ${providerModule} on node ${providerNode} is not a provider (give it provides: KIND)`,
            ),
          );
          continue;
        }
        if (provider === source && providerModule === module) {
          problems.push(problem('self-consumption', at, `${providerNode}/${module} cannot consume itself`));
          continue;
        }
        relations.push({ consumerModule: module, providerNode, providerModule, kind });
        consumers.set(providerNode, (consumers.get(providerNode) ?? 0) + source.names.length);
      }
    }
    relations.sort(compareRelations);
    checkOwnLimits(source, relations.length, options.limits, problems, problem);
    for (const name of source.names) {
      if (owner.get(name) !== source) continue;
      nodes.push({ node: name, labels: source.labels, assignments, relations });
      origins.set(name, source.path);
    }
  }
  for (const [node, count] of consumers) {
    const max = options.limits.consumersPerNode;
    if (count > max)
      problems.push(
        problem(
          'limit-exceeded',
          origins.get(node) ?? [],
          `node ${node} would have ${count} consumers, over its limit of ${max} (consumersPerNode)`,
          true,
        ),
      );
  }
  nodes.sort((a, b) => byText(a.node, b.node));
  const versions = new Map<string, string>();
  const assigned = new Set(sources.flatMap((source) => [...source.moduleNames]));
  for (const [module, settings] of Object.entries(file.modules ?? {})) {
    if (!assigned.has(module)) {
      problems.push(
        problem(
          'unknown-module',
          ['modules', module],
          `module ${module} is assigned to no node of the file`,
          true,
        ),
      );
      continue;
    }
    if (settings?.version !== undefined) versions.set(module, settings.version);
  }
  return { mesh: { nodes, origins, ...(versions.size > 0 ? { versions } : {}) }, problems };
}

type Problem = ReturnType<typeof problemAt>;

function sourcesOf(
  file: MeshFile,
  maxNodes: number,
  problems: MeshFileProblem[],
  problem: Problem,
): Source[] {
  const sources: Source[] = [];
  let total = 0;
  let full = false;
  const modulesOf = (given: Record<string, ModuleEntry | null> | undefined) => {
    const modules = Object.entries(given ?? {}).map(([name, entry]) => [name, entry ?? {}] as const);
    return { modules, moduleNames: new Set(modules.map(([name]) => name)) };
  };
  for (const [name, entry] of Object.entries(file.nodes ?? {})) {
    total += 1;
    const path = ['nodes', name];
    sources.push({
      path,
      names: [name],
      madeBy: [path],
      labels: sortedLabels(entry?.labels ?? {}),
      ...modulesOf(entry?.modules),
    });
  }
  for (const [group, entry] of Object.entries(file.groups ?? {})) {
    const patterns = typeof entry.nodes === 'string' ? [entry.nodes] : entry.nodes;
    const names: string[] = [];
    const madeBy: Origin[] = [];
    for (const [i, pattern] of patterns.entries()) {
      const at = typeof entry.nodes === 'string' ? ['groups', group, 'nodes'] : ['groups', group, 'nodes', i];
      // Past the bound, patterns are only checked, not expanded, and the bound is reported once.
      const expanded = expandPattern(pattern, full ? 0 : maxNodes - total);
      if ('error' in expanded) {
        if (expanded.count === undefined) problems.push(problem('bad-range', at, expanded.error));
        else {
          if (!full)
            problems.push(
              problem(
                'too-many-nodes',
                at,
                `${pattern} is ${expanded.count} nodes: with the ${total} before it, more than the ${maxNodes} a mesh file may hold (patterns after it are not expanded)`,
              ),
            );
          full = true;
        }
        continue;
      }
      total += expanded.names.length;
      for (const name of expanded.names) {
        names.push(name);
        madeBy.push(at);
      }
    }
    sources.push({
      path: ['groups', group],
      names,
      madeBy,
      labels: sortedLabels(entry.labels ?? {}),
      ...modulesOf(entry.modules),
    });
  }
  if (total > maxNodes)
    problems.push(
      problem('too-many-nodes', ['nodes'], `the file has ${total} nodes, more than ${maxNodes}`, true),
    );
  return sources;
}

/** One kind per module, mesh-wide: the first the file gives, else the live mesh's. */
function kindsOf(
  sources: readonly Source[],
  live: ReadonlyMap<string, string | null> | undefined,
  problems: MeshFileProblem[],
  problem: Problem,
): Map<string, string | null> {
  const given = new Map<string, { kind: string; path: Origin }>();
  for (const source of sources)
    for (const [module, entry] of source.modules) {
      if (!entry.provides || !providerKind.safeParse(entry.provides).success) continue;
      const path = [...source.path, 'modules', module, 'provides'];
      const first = given.get(module);
      if (!first) given.set(module, { kind: entry.provides, path });
      else if (first.kind !== entry.provides)
        problems.push(
          problem(
            'provider-kind-conflict',
            path,
            `module ${module} provides ${first.kind} (${pathText(first.path)}); it cannot also provide ${entry.provides}: a module's kind is mesh-wide`,
          ),
        );
    }
  const kinds = new Map<string, string | null>(live ?? []);
  for (const [module, { kind }] of given) kinds.set(module, kind);
  return kinds;
}

function checkOwnLimits(
  source: Source,
  consumes: number,
  limits: MeshFileLimits,
  problems: MeshFileProblem[],
  problem: Problem,
) {
  const who = source.path[0] === 'groups' ? `each node of group ${source.path[1]}` : `node ${source.path[1]}`;
  if (source.modules.length > limits.modulesPerNode)
    problems.push(
      problem(
        'limit-exceeded',
        [...source.path, 'modules'],
        `${who} would have ${source.modules.length} modules, over its limit of ${limits.modulesPerNode} (modulesPerNode)`,
        true,
      ),
    );
  if (consumes > limits.consumesPerNode)
    problems.push(
      problem(
        'limit-exceeded',
        [...source.path, 'modules'],
        `${who} would consume ${consumes} providers, over its limit of ${limits.consumesPerNode} (consumesPerNode)`,
        true,
      ),
    );
}
