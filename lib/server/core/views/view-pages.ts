import { labelsWithFacts } from '../mesh/host-facts.ts';
import { matchesSelector, type Selector, selectorText } from '../mesh/labels.ts';
import type { NodeStatus } from './ports.ts';
import type { ListedNode, MeshEdge, MeshNode } from './views.ts';

/**
 * The views of the mesh (`GET /status`, `/nodes`, `/graph`) a page at a time: nodes in name
 * order, each page starting after the last node of the one before, so a page costs what is on
 * it and never the whole mesh (docs/http-api.md, "Pages and filters").
 */

/** What a page may be narrowed to; every filter given must hold. */
export type ViewFilter = {
  /** Marked possibly behind. */
  readonly behind?: true;
  /** Its host's broker connection is down (known, and disconnected). */
  readonly offline?: true;
  /** Its host last reported a failed apply. */
  readonly failed?: true;
  /** Its host's check last said unhealthy. */
  readonly unhealthy?: true;
  /** Not marked behind: sent all that feeds its declaration (the fleet view's "up to date"). */
  readonly current?: true;
  /** Its host never enrolled. */
  readonly unenrolled?: true;
  /** It carries this module. */
  readonly module?: string;
  /** Its labels, and its host's facts as `agent`, `os` and `arch`, match this selector (docs/mesh-file.md). */
  readonly on?: Selector;
  /** Its name starts with this (the console's search). */
  readonly prefix?: string;
};

export type ViewQuery = {
  readonly filter: ViewFilter;
  /** At most this many nodes. */
  readonly limit: number;
  /** Start after this node (the cursor's place). */
  readonly after?: string;
};

export type Page<Entry> = {
  readonly entries: readonly Entry[];
  /** The last node this page looked at, to start the next page after; null when there is no more. */
  readonly next: string | null;
};

/**
 * Nodes on a page when the caller names no limit, and the most it may name. A node of `/nodes`
 * is about 430 bytes of JSON, so 1,000 of them are well inside a 1 MiB answer; a mesh of up to
 * 1,000 nodes is answered whole, as before pages.
 */
export const defaultPageNodes = 1000;
export const maxPageNodes = 1000;
/**
 * Candidates a filtered page reads before it answers, full or not: a filter the index cannot
 * answer alone (a selector, or two filters together) then costs a bounded read per page and
 * says where to go on, as DynamoDB's own filtered Query does.
 */
export const candidatesPerPage = 4000;

/** The filter as one text: a cursor carries it, so it is refused on a page of other filters. */
export function filterText(filter: ViewFilter): string {
  return [
    filter.behind ? 'behind' : '',
    filter.offline ? 'offline' : '',
    filter.failed ? 'failed' : '',
    filter.unhealthy ? 'unhealthy' : '',
    filter.current ? 'current' : '',
    filter.unenrolled ? 'unenrolled' : '',
    filter.module ? `module=${filter.module}` : '',
    filter.on ? `on=${selectorText(filter.on)}` : '',
    filter.prefix ? `prefix=${filter.prefix}` : '',
  ]
    .filter(Boolean)
    .join(';');
}

/** Whether a node, as its partition shows it, passes every filter. */
export function passes(
  filter: ViewFilter,
  status: NodeStatus,
  modules: readonly { readonly module: string }[],
): boolean {
  if (filter.behind && !status.behind) return false;
  if (filter.offline && status.online !== false) return false;
  if (filter.failed && status.reportState !== 'failed') return false;
  if (filter.unhealthy && status.health?.state !== 'unhealthy') return false;
  if (filter.current && status.behind) return false;
  if (filter.unenrolled && status.enrolled) return false;
  if (filter.module && !modules.some((m) => m.module === filter.module)) return false;
  if (filter.on && !matchesSelector(filter.on, labelsWithFacts(status.labels, status.facts))) return false;
  if (filter.prefix && !status.node.startsWith(filter.prefix)) return false;
  return true;
}

/** A page of the graph: its nodes, and the relations they consume through. */
export type GraphPage = { readonly nodes: readonly MeshNode[]; readonly edges: readonly MeshEdge[] };

/** The views a page at a time, as lib/server/adapters/views/view-pages.ts reads them. */
export interface ViewPages {
  statusPage(query: ViewQuery): Promise<Page<NodeStatus>>;
  nodesPage(query: ViewQuery): Promise<Page<ListedNode>>;
  graphPage(query: ViewQuery): Promise<GraphPage & { readonly next: string | null }>;
}
