import { jsonBytes, pageBytes } from '../../core/answer-pages.ts';
import { heldOf } from '../../core/hold/held-back.ts';
import type { HoldReader } from '../../core/hold/ports.ts';
import { mapLimit } from '../../core/map-limit.ts';
import type { NodeStatus } from '../../core/views/ports.ts';
import {
  candidatesPerPage,
  type GraphPage,
  type Page,
  passes,
  type ViewPages,
  type ViewQuery,
} from '../../core/views/view-pages.ts';
import type { ListedNode, MeshEdge, MeshNode } from '../../core/views/views.ts';
import { edgesOf, type NodePartition, readNodePartition } from '../dynamodb/node-partition.ts';
import { TableStore, type TableStoreOptions } from '../dynamodb/requests.ts';
import { meshNodeOf } from './mesh-view-reader.ts';
import { nodeStatusOf } from './status-reader.ts';
import { nextCandidates } from './view-lists.ts';

/** The node as a view shows it, with who holds it back when something does. */
const withHolder = (node: MeshNode, status: NodeStatus): MeshNode =>
  status.heldBack === undefined ? node : { ...node, heldBack: status.heldBack };

/** Partitions read at once, as the whole-mesh reads do. */
const readsInFlight = 16;
/** Partitions read before the page checks whether it is full or past its bytes. */
const sliceNodes = 128;
/** Names asked of a list at once when a page is filtered beyond what its list answers. */
const filteredBatch = 200;
/** Names a page looks at in its list, read or ruled out by their labels, before it answers. */
const namesPerPage = 20_000;

/**
 * `GET /status`, `/nodes` and `/graph` a page at a time: the names come from one of the lists of
 * view-lists.ts, each node's partition is read whole (one strongly consistent Query, as the
 * whole-mesh reads do) and checked against every filter, and the page stops at its limit, at
 * core/view-pages.ts's byte bound, or when it has read `candidatesPerPage` partitions.
 */
export class DynamoDBViewPages extends TableStore implements ViewPages {
  readonly #pageBytes: number;
  readonly #holds: HoldReader | undefined;

  /** `holds`: each entry says who holds its node back (`heldBack`), counted in the page's bytes. */
  constructor(options: TableStoreOptions & { readonly pageBytes?: number; readonly holds?: HoldReader }) {
    super(options);
    this.#pageBytes = options.pageBytes ?? pageBytes;
    this.#holds = options.holds;
  }

  statusPage(query: ViewQuery): Promise<Page<NodeStatus>> {
    return this.#page(query, (_partition, status) => status);
  }

  nodesPage(query: ViewQuery): Promise<Page<ListedNode>> {
    return this.#page(query, (partition, status) => {
      const node = withHolder(meshNodeOf(partition) as MeshNode, status);
      // The provider's side of each relation is in its own partition (mesh-items.ts), so the
      // count each way needs no other node's partition.
      const consumedBy = partition.items.filter((item) => String(item.sk).startsWith('consumedby#')).length;
      return { ...node, relations: { consumes: partition.relations.length, consumedBy } };
    });
  }

  async graphPage(query: ViewQuery): Promise<GraphPage & { readonly next: string | null }> {
    const page = await this.#page(query, (partition, status) => ({
      node: withHolder(meshNodeOf(partition) as MeshNode, status),
      edges: edgesOf(partition),
    }));
    const edges: MeshEdge[] = page.entries.flatMap((entry) => entry.edges);
    return { nodes: page.entries.map((entry) => entry.node), edges, next: page.next };
  }

  async #page<Entry>(
    query: ViewQuery,
    entryOf: (partition: NodePartition, status: NodeStatus) => Entry,
  ): Promise<Page<Entry>> {
    const { filter, limit } = query;
    const entries: Entry[] = [];
    // Filters beyond the one the list answers (the name prefix is its key range) leave gaps.
    const narrowed =
      filter.on !== undefined || Object.keys(filter).filter((name) => name !== 'prefix').length > 1;
    let bytes = 0;
    let after = query.after;
    // The last node looked at: a page cut short by its bytes starts the next page after it.
    let previous = query.after ?? null;
    let read = 0;
    let looked = 0;
    for (;;) {
      const wanted = limit - entries.length;
      const count = narrowed ? Math.max(wanted, filteredBatch) : wanted;
      const candidates = await nextCandidates(this.client, this.tableName, filter, after, count);
      looked += candidates.looked;
      const { names } = candidates;
      // Read a slice at a time, so a page that fills or is cut short early reads little more.
      for (let from = 0; from < names.length; from += sliceNodes) {
        const partitions = await mapLimit(names.slice(from, from + sliceNodes), readsInFlight, (node) =>
          readNodePartition(this.client, this.tableName, node),
        );
        read += partitions.length;
        const held = await this.#heldBack(partitions.map((partition) => partition.node));
        for (const [at, partition] of partitions.entries()) {
          const found = nodeStatusOf(partition.node, partition.items);
          const by = held.get(partition.node);
          const status = found && by !== undefined ? { ...found, heldBack: by } : found;
          // A name whose node item is gone (removed since the list was read) is not in the mesh.
          if (!status || !passes(filter, status, partition.assignments)) {
            previous = partition.node;
            continue;
          }
          const entry = entryOf(partition, status);
          bytes += jsonBytes(entry) + 1;
          if (bytes > this.#pageBytes && entries.length > 0) return { entries, next: previous };
          entries.push(entry);
          previous = partition.node;
          if (entries.length === limit) {
            const last = from + at === names.length - 1 && candidates.done;
            return { entries, next: last ? null : partition.node };
          }
        }
      }
      if (candidates.done || candidates.last === null) return { entries, next: null };
      after = candidates.last;
      if (read >= candidatesPerPage || looked >= namesPerPage) return { entries, next: after };
    }
  }

  /** Who holds each of these nodes back, read once a slice (docs/decisions/held-back.md). */
  async #heldBack(nodes: readonly string[]): Promise<ReadonlyMap<string, string>> {
    if (!this.#holds) return new Map();
    const view = await this.#holds.view(nodes);
    return new Map(heldOf(nodes, view).map((held) => [held.node, held.by]));
  }
}
