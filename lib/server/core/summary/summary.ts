import { compareText as compare } from '../canonical.ts';
import type { NodeStatus } from '../views/ports.ts';
import type { MeshNode } from '../views/views.ts';
import { type CounterName, type Deltas, noVersion, waitingNodes, waitingRelations } from './counters.ts';

/**
 * `GET /summary` and `mesh status --summary`: the counts of the mesh, kept by the stream
 * aggregator (counters.ts) and read without reading any node.
 */
export type Summary = {
  readonly nodes: number;
  readonly enrolled: number;
  readonly online: number;
  /** Nodes whose host's connection is down (`online: false`); present only when some are. */
  readonly offline?: number;
  readonly behind: number;
  /** Per revision, ascending: how many nodes last applied it, how many last reported it failed. */
  readonly revisions: readonly RevisionCount[];
  /**
   * Per module and version, by module then version: how many nodes carry it, how many last
   * applied a declaration with it, and how many last failed one with it.
   */
  readonly modules: readonly ModuleVersionCount[];
  /**
   * Relations not minted for want of an enrolment, and the nodes (consumers) holding them, as
   * their last sends left them; present only when some wait.
   */
  readonly waiting?: { readonly nodes: number; readonly relations: number };
  /**
   * What holds nodes back (docs/decisions/held-back.md): each rollout that holds its nodes, with
   * how many it has not sent, and each freeze in force; present only when something holds. Read
   * with the summary, not counted by it.
   */
  readonly heldBack?: {
    readonly rollouts: ReadonlyArray<{
      readonly id: string;
      readonly state: string;
      readonly notSent: number;
    }>;
    readonly freezes: ReadonlyArray<{
      readonly on: string;
      readonly reason: string;
      readonly until?: string;
    }>;
  };
  /**
   * Nodes by the health their hosts last reported (lib/server/core/health.ts): `unknown` is
   * every other node, those whose host has no check, or reported none, or whose check has not
   * passed yet since an apply.
   */
  readonly health: { readonly healthy: number; readonly unhealthy: number; readonly unknown: number };
  /**
   * Nodes by the agent version, the OS and the architecture their hosts last said they run
   * (host-facts.ts), most first; a node whose host has said none is in none. Present only when
   * some host said them.
   */
  readonly agents?: readonly FactCount[];
  readonly systems?: readonly FactCount[];
  readonly architectures?: readonly FactCount[];
  /**
   * Nodes by each label key and value (docs/mesh-file.md), keys in order, values most nodes first:
   * at most `labelValuesShown` values a key, the rest summed in `otherValues` and `otherNodes`.
   * Present only when some node has labels.
   */
  readonly labels?: readonly LabelCount[];
  /**
   * False when a change may be missing from the counters: the aggregator let a batch go, or a
   * rebuild is under way (the counts are then not to be trusted until `mesh summary rebuild`),
   * or it is catching up with the table's changes (`catchingUp`: the counts trail the mesh).
   */
  readonly exact: boolean;
  /** Present when the aggregator is behind the table's changes (a restart, a backlog): exact again once it has caught up. */
  readonly catchingUp?: true;
};

/** How many nodes say one value of a fact: an agent version, an OS. */
export type FactCount = { readonly value: string; readonly nodes: number };

/** One label key's values, most nodes first, and what the list leaves out. */
export type LabelCount = {
  readonly key: string;
  readonly values: readonly FactCount[];
  /** Values left out past the first `labelValuesShown`, and the nodes that have them. */
  readonly otherValues?: number;
  readonly otherNodes?: number;
};

/**
 * Values a key lists: a key with a value per node (`host=…`) is a count, not a list of them all,
 * and the answer stays small at any fleet size.
 */
export const labelValuesShown = 50;

export type RevisionCount = { readonly revision: number; readonly applied: number; readonly failed: number };
export type ModuleVersionCount = {
  readonly module: string;
  /** Null for carriers whose assignment names no version. */
  readonly version: string | null;
  readonly carriers: number;
  readonly applied: number;
  readonly failed: number;
};

/** The summary the counters say; counters at zero are left out of the lists. */
export function summaryOf(counters: Deltas, exact: boolean, catchingUp = false): Summary {
  const revisions = new Map<number, { applied: number; failed: number }>();
  const modules = new Map<
    string,
    { module: string; version: string | null; carriers: number; applied: number; failed: number }
  >();
  const versionOf = (module: string, version: string) => {
    const key = `${module}#${version}`;
    const entry = modules.get(key) ?? {
      module,
      version: version === noVersion ? null : version,
      carriers: 0,
      applied: 0,
      failed: 0,
    };
    modules.set(key, entry);
    return entry;
  };
  const agents = new Map<string, number>();
  const systems = new Map<string, number>();
  const architectures = new Map<string, number>();
  const labels = new Map<string, Map<string, number>>();
  for (const [name, count] of counters) {
    if (count === 0) continue;
    const [kind, ...rest] = name.split('#');
    if (kind === 'label' && rest.length === 2) {
      const [key, value] = rest as [string, string];
      const values = labels.get(key) ?? new Map<string, number>();
      values.set(value, (values.get(value) ?? 0) + count);
      labels.set(key, values);
    } else if ((kind === 'agent' || kind === 'os' || kind === 'arch') && rest.length === 1) {
      const byValue = kind === 'agent' ? agents : kind === 'os' ? systems : architectures;
      const value = rest[0] as string;
      byValue.set(value, (byValue.get(value) ?? 0) + count);
    } else if (kind === 'applied' || kind === 'failed') {
      const revision = Number(rest[0]);
      const entry = revisions.get(revision) ?? { applied: 0, failed: 0 };
      entry[kind] += count;
      revisions.set(revision, entry);
    } else if (rest.length === 2) {
      const [module, version] = rest as [string, string];
      if (kind === 'version') versionOf(module, version).carriers += count;
      else if (kind === 'applied-version') versionOf(module, version).applied += count;
      else if (kind === 'failed-version') versionOf(module, version).failed += count;
    }
  }
  return {
    nodes: counters.get('nodes') ?? 0,
    enrolled: counters.get('enrolled') ?? 0,
    online: counters.get('online') ?? 0,
    ...((counters.get('offline') ?? 0) > 0 ? { offline: counters.get('offline') as number } : {}),
    behind: counters.get('behind') ?? 0,
    revisions: [...revisions]
      .sort(([a], [b]) => a - b)
      .map(([revision, counts]) => ({ revision, ...counts })),
    modules: [...modules.values()].sort(
      (a, b) => compare(a.module, b.module) || compare(a.version ?? '', b.version ?? ''),
    ),
    ...waitingCounted(counters.get(waitingNodes) ?? 0, counters.get(waitingRelations) ?? 0),
    health: healthCounts(counters),
    ...factCounts('agents', agents),
    ...factCounts('systems', systems),
    ...factCounts('architectures', architectures),
    ...labelCounts(labels),
    exact: exact && !catchingUp,
    ...(catchingUp ? { catchingUp: true as const } : {}),
  };
}

/** A node's report's modules, as `GET /nodes/{node}` shows them (appliedModules, failedModules). */
export type ReportModules = {
  readonly applied?: Readonly<Record<string, string | null>>;
  readonly failed?: Readonly<Record<string, string | null>>;
};

/**
 * The same summary from today's full reads (`GET /status` and the graph), which read every
 * node: what the counters must agree with. Failed counts need the report's revision, which a
 * node's status does not carry, so `failedRevision` gives it, and the modules a report named,
 * which `reportModules` gives.
 */
export function summaryFromFullRead(
  statuses: readonly NodeStatus[],
  graph: readonly MeshNode[],
  failedRevision: (node: string) => number | null,
  reportModules: (node: string) => ReportModules = () => ({}),
): Summary {
  const counters = new Map<CounterName, number>();
  const add = (name: CounterName) => counters.set(name, (counters.get(name) ?? 0) + 1);
  for (const status of statuses) {
    add('nodes');
    if (status.enrolled) add('enrolled');
    if (status.online === true) add('online');
    if (status.online === false) add('offline');
    if (status.behind) add('behind');
    if (status.waiting) {
      add(waitingNodes);
      counters.set(waitingRelations, (counters.get(waitingRelations) ?? 0) + status.waiting.relations);
    }
    if (status.health) add(`health#${status.health.state}`);
    for (const [key, value] of Object.entries(status.labels ?? {})) add(`label#${key}#${value}`);
    if (status.facts) {
      add(`agent#${status.facts.agent}`);
      add(`os#${status.facts.os}`);
      add(`arch#${status.facts.arch}`);
    }
    if (status.appliedRevision !== null) add(`applied#${status.appliedRevision}`);
    const failed = status.reportState === 'failed' ? failedRevision(status.node) : null;
    if (failed !== null) add(`failed#${failed}`);
    const { applied, failed: failedModules } = reportModules(status.node);
    for (const [module, version] of Object.entries(applied ?? {}))
      add(`applied-version#${module}#${version ?? noVersion}`);
    if (status.reportState === 'failed')
      for (const [module, version] of Object.entries(failedModules ?? {}))
        add(`failed-version#${module}#${version ?? noVersion}`);
  }
  for (const node of graph)
    for (const module of node.modules) add(`version#${module.module}#${module.version ?? noVersion}`);
  return summaryOf(counters, true);
}

/** Most nodes first, then by value: what a fleet mostly runs leads; left out when no host said it. */
function factCounts<Name extends 'agents' | 'systems' | 'architectures'>(
  name: Name,
  byValue: ReadonlyMap<string, number>,
): Partial<Record<Name, FactCount[]>> {
  const counts = [...byValue]
    .filter(([, nodes]) => nodes > 0)
    .map(([value, nodes]) => ({ value, nodes }))
    .sort((a, b) => b.nodes - a.nodes || compare(a.value, b.value));
  return counts.length > 0 ? ({ [name]: counts } as Partial<Record<Name, FactCount[]>>) : {};
}

/** Each key's values most nodes first, the list cut at labelValuesShown; left out when no node has labels. */
function labelCounts(labels: ReadonlyMap<string, ReadonlyMap<string, number>>): { labels?: LabelCount[] } {
  const counted: LabelCount[] = [];
  for (const key of [...labels.keys()].sort(compare)) {
    const values = [...(labels.get(key) ?? [])]
      .filter(([, nodes]) => nodes > 0)
      .map(([value, nodes]) => ({ value, nodes }))
      .sort((a, b) => b.nodes - a.nodes || compare(a.value, b.value));
    if (values.length === 0) continue;
    const others = values.slice(labelValuesShown);
    counted.push({
      key,
      values: values.slice(0, labelValuesShown),
      ...(others.length > 0
        ? { otherValues: others.length, otherNodes: others.reduce((sum, v) => sum + v.nodes, 0) }
        : {}),
    });
  }
  return counted.length > 0 ? { labels: counted } : {};
}

/** Healthy and unhealthy as counted; unknown the rest of the nodes, reported so or not at all. */
function healthCounts(counters: Deltas) {
  const healthy = counters.get('health#healthy') ?? 0;
  const unhealthy = counters.get('health#unhealthy') ?? 0;
  return { healthy, unhealthy, unknown: Math.max(0, (counters.get('nodes') ?? 0) - healthy - unhealthy) };
}

/** Left out at zero, so a mesh with nothing waiting is summed as before waiting was counted. */
const waitingCounted = (nodes: number, relations: number) =>
  nodes > 0 || relations > 0 ? { waiting: { nodes, relations } } : {};
