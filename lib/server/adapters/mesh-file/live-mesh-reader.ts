import { mapLimit } from '../../core/map-limit.ts';
import type { Relation } from '../../core/mesh/model.ts';
import type { LiveNode, MeshAssignment } from '../../core/mesh-file/mesh.ts';
import type {
  DescribedRevision,
  LiveMeshReader,
  LiveMeshReading,
  LiveModule,
  MeshSliceReader,
} from '../../core/mesh-file/ports.ts';
import { canonicalLive, liveRevision } from '../../core/mesh-file/revision.ts';
import { assignmentFrom, labelsFrom, moduleKey, nodeKey, relationFrom } from '../dynamodb/mesh-items.ts';
import { getItems, type Item, queryAll, scanAll, TableStore } from '../dynamodb/requests.ts';
import { describedFrom, describedKey } from './mesh-file-described.ts';

const store = 'the inventory table';
// Every name by placeholder: some (`module`, `kind`) may be DynamoDB's reserved words.
const projected = [
  'pk',
  'sk',
  'labels',
  'module',
  'provides',
  'version',
  'consumerModule',
  'providerNode',
  'providerModule',
  'kind',
  'fileDigest',
  'revision',
  'tests',
];

/** Items a page examines: small enough that a page answers well inside the client's 3 s request timeout on a loaded DynamoDB Local. */
export const pageItems = 2_000;

/** Segments of the parallel scan: enough to keep a Lambda's connections busy, few enough to stay under the table's read capacity in bursts. */
export const scanSegments = 8;

/**
 * The whole live mesh in one pass over the inventory: a strongly consistent parallel Scan,
 * filtered to the mesh's items (nodes, marks, assignments, relations, module records) and the
 * revision the last applied file describes (mesh-file-described.ts). Its cost
 * is O(mesh) reads: the filter saves transfer, not capacity, so at 10,000 nodes with three
 * modules and a relation each (about 60,000 items, most of them under 1 KB) it is a few hundred
 * 1 MB pages, a few thousand read units. It runs only on plan, apply, export and the first part
 * of an apply job, each of which needs the whole mesh anyway (a job's later parts read their
 * slices with DynamoDBMeshSliceReader); the per-node Queries a push makes would cost one request per node.
 * Strongly consistent, because a plan made from a read that missed a write a moment before would
 * add what is already there and fail on its conditions, or call the mesh matching when it is not.
 */
export class DynamoDBLiveMeshReader extends TableStore implements LiveMeshReader {
  async read(): Promise<LiveMeshReading> {
    const pages = await Promise.all(
      Array.from({ length: scanSegments }, (_, segment) => this.#segment(segment)),
    );
    return readingOf(pages.flat());
  }

  #segment(segment: number): Promise<Item[]> {
    return scanAll(this.client, store, {
      TableName: this.tableName,
      Segment: segment,
      TotalSegments: scanSegments,
      ConsistentRead: true,
      Limit: pageItems,
      FilterExpression:
        '(begins_with(pk, :nodes) AND (sk IN (:node, :mark) OR begins_with(sk, :module) OR begins_with(sk, :consumes))) OR (begins_with(pk, :modules) AND sk = :record) OR (pk = :file AND sk = :described)',
      ProjectionExpression: projected.map((_, i) => `#p${i}`).join(', '),
      ExpressionAttributeNames: Object.fromEntries(projected.map((name, i) => [`#p${i}`, name])),
      ExpressionAttributeValues: {
        ':nodes': 'node#',
        ':node': 'node',
        ':mark': 'mark',
        ':module': 'module#',
        ':consumes': 'consumes#',
        ':modules': 'module#',
        ':record': 'module',
        ':file': describedKey.pk,
        ':described': describedKey.sk,
      },
    });
  }
}

/** The mesh as a reading, from its items (nodes, marks, assignments, relations, module records, the file described). */
function readingOf(items: readonly Item[]): LiveMeshReading {
  type Draft = {
    labels: Record<string, string>;
    assignments: MeshAssignment[];
    relations: Relation[];
    behind: boolean;
    exists: boolean;
  };
  const drafts = new Map<string, Draft>();
  const draft = (node: string) => {
    let found = drafts.get(node);
    if (!found) {
      found = { labels: {}, assignments: [], relations: [], behind: false, exists: false };
      drafts.set(node, found);
    }
    return found;
  };
  const modules = new Map<string, LiveModule>();
  let described: DescribedRevision | undefined;
  for (const item of items) {
    const pk = String(item.pk);
    const sk = String(item.sk);
    if (pk === describedKey.pk) {
      described = describedFrom(item);
      continue;
    }
    if (pk.startsWith('module#')) {
      const { version, provides } = assignmentFrom(item);
      modules.set(pk.slice('module#'.length), { version, provides });
      continue;
    }
    const node = draft(pk.slice('node#'.length));
    if (sk === 'node') {
      node.exists = true;
      node.labels = labelsFrom(item);
    } else if (sk === 'mark') node.behind = true;
    else if (sk.startsWith('module#')) {
      const { module, provides } = assignmentFrom(item);
      node.assignments.push({ module, provides });
    } else if (sk.startsWith('consumes#')) node.relations.push(relationFrom(item));
  }
  const nodes: LiveNode[] = canonicalLive(
    [...drafts]
      .filter(([, d]) => d.exists)
      .map(([node, d]) => ({
        node,
        labels: d.labels,
        assignments: d.assignments,
        relations: d.relations,
        behind: d.behind,
      })),
  );
  const kinds = new Map([...modules].map(([module, record]) => [module, record.provides]));
  const versions = new Map([...modules].map(([module, record]) => [module, record.version]));
  return {
    mesh: { revision: liveRevision(nodes, kinds, versions), nodes, modules: kinds, versions },
    modules,
    ...(described ? { described } : {}),
  };
}

/** Each node's partition read at once, at most this many: a slice's nodes are read in about a second. */
const nodesInFlight = 16;

/**
 * The nodes one slice of a job's plan writes (plan-slices.ts), each its own partition's items by a
 * strongly consistent Query (a key condition cannot pick sort keys by several prefixes, so the
 * node's other items come too, and readingOf passes over them), and the slice's modules' records by key: O(the slice), whatever the
 * mesh's size.
 */
export class DynamoDBMeshSliceReader extends TableStore implements MeshSliceReader {
  async read(nodes: readonly string[], modules: readonly string[]): Promise<LiveMeshReading> {
    const partitions = await mapLimit([...new Set(nodes)], nodesInFlight, (node) =>
      queryAll(this.client, store, {
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk',
        ProjectionExpression: projected.map((_, i) => `#p${i}`).join(', '),
        ExpressionAttributeNames: Object.fromEntries(projected.map((name, i) => [`#p${i}`, name])),
        ExpressionAttributeValues: {
          ':pk': nodeKey(node).pk,
        },
        ConsistentRead: true,
      }),
    );
    const records = await getItems(this.client, store, this.tableName, modules.map(moduleKey));
    return readingOf([...partitions.flat(), ...records.values()]);
  }
}
