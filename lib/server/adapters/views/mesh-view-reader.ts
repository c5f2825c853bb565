import { viewOfToken } from '../../core/enrolment/token-state.ts';
import { mapLimit } from '../../core/map-limit.ts';
import { noVersion } from '../../core/summary/counters.ts';
import type { MeshViewReader } from '../../core/views/ports.ts';
import {
  hideSecrets,
  type MeshEdge,
  type MeshGraph,
  type MeshNode,
  type NodeDetails,
  presenceOf,
} from '../../core/views/views.ts';
import { allNodesIndex, labelsFrom, markedPartition } from '../dynamodb/mesh-items.ts';
import { edgesOf, type NodePartition, readNodePartition, tokenOf } from '../dynamodb/node-partition.ts';
import { type Item, queryAll, TableStore } from '../dynamodb/requests.ts';
import { nodeStatusOf, numberOf, textOf } from './status-reader.ts';

const store = 'the inventory table';
/** Partitions read at once: as many as `mesh status` reads. */
const readsInFlight = 16;

/**
 * `mesh node list|show`, `mesh graph` and the console, as read models over each node's
 * partition (node-partition.ts), the same items `mesh status` reads (status-reader.ts).
 *
 * Access: the nodes are those of gsi1 (`mesh#node`, which may lag on AWS) joined with the marked
 * ones (`mesh#marked`, strongly consistent): a node added a moment ago is marked, so it is
 * never missed. Each node's partition is then one strongly consistent Query. A node's
 * consumers are its own `consumedby#` items and grants (below).
 */
export class DynamoDBMeshViewReader extends TableStore implements MeshViewReader {
  async graph(): Promise<MeshGraph> {
    const names = await this.#nodeNames();
    const partitions = await mapLimit(names, readsInFlight, (node) =>
      readNodePartition(this.client, this.tableName, node),
    );
    const nodes: MeshNode[] = [];
    const edges: MeshEdge[] = [];
    for (const partition of partitions) {
      const node = meshNodeOf(partition);
      // A node listed by the index but gone since has no node item: it is not in the mesh.
      if (!node) continue;
      nodes.push(node);
      edges.push(...edgesOf(partition));
    }
    return { nodes, edges };
  }

  async details(node: string): Promise<NodeDetails | undefined> {
    const partition = await readNodePartition(this.client, this.tableName, node);
    const base = meshNodeOf(partition);
    if (!base) return undefined;
    const { single } = partition;
    const delivery = single.get('delivery');
    const report = single.get('report');
    const token = tokenOf(single.get('token'));
    const declaration = textOf(delivery, 'declaration');
    return {
      ...base,
      labels: labelsFrom(single.get('node')),
      createdAt: textOf(single.get('node'), 'createdAt'),
      markedAt: textOf(single.get('mark'), 'markedAt'),
      thumbprint: textOf(single.get('enrolment'), 'thumbprint'),
      sentDigest: textOf(delivery, 'digest'),
      report: report
        ? {
            state: textOf(report, 'state'),
            revision: numberOf(report, 'revision'),
            step: textOf(report, 'step'),
            sequence: numberOf(report, 'sequence'),
            heardAt: textOf(report, 'heardAt'),
            appliedModules: modulesOf(report.appliedModules),
            failedModules: modulesOf(report.failedModules),
          }
        : null,
      token: token ? viewOfToken(token, Date.parse(this.now())) : null,
      output: outputOf(single.get('health')),
      consumes: edgesOf(partition),
      consumedBy: this.#consumersOf(partition),
      declaration: declaration === null ? null : hideSecrets(JSON.parse(declaration)),
      declarationParts: typeof delivery?.parts === 'number' ? delivery.parts : null,
    };
  }

  async #nodeNames(): Promise<string[]> {
    const [listed, marked] = await Promise.all([
      queryAll(this.client, store, {
        TableName: this.tableName,
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :index',
        ExpressionAttributeValues: { ':index': allNodesIndex },
      }),
      this.#marked(),
    ]);
    return [...new Set([...listed.map((item) => String(item.gsi1sk)), ...marked])].sort();
  }

  async #marked(): Promise<string[]> {
    const items = await queryAll(this.client, store, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': markedPartition },
      ConsistentRead: true,
    });
    return items.map((item) => String(item.sk));
  }

  /**
   * Every relation to the node's providers, minted or waiting (for an enrolment, or with a
   * held-back node): a consume writes the relation on the provider's side too (`consumedby#`,
   * mesh-items.ts), in the same transaction, so the provider's own partition names every
   * consumer; its grants say which are minted. No index, no scan, no other node read.
   */
  #consumersOf(provider: NodePartition): MeshEdge[] {
    const edges = new Map<string, MeshEdge>();
    for (const edge of [...provider.consumers, ...provider.grants]) {
      const key = `${edge.consumer.node}/${edge.consumer.module}>${edge.provider.module}`;
      const seen = edges.get(key);
      if (!seen || (!seen.minted && edge.minted)) edges.set(key, edge);
    }
    return [...edges.values()].sort((a, b) =>
      `${a.consumer.node}/${a.consumer.module}`.localeCompare(`${b.consumer.node}/${b.consumer.module}`),
    );
  }
}

export function meshNodeOf(partition: NodePartition): MeshNode | undefined {
  const status = nodeStatusOf(partition.node, partition.items);
  if (!status) return undefined;
  return {
    ...status,
    modules: partition.assignments
      .map((assignment) => ({
        module: assignment.module,
        version: assignment.version,
        provides: assignment.provides,
      }))
      .sort((a, b) => a.module.localeCompare(b.module)),
    presence: presenceOf(status),
  };
}

/** The outputs the health item keeps (report-store.ts); null when it keeps none. */
function outputOf(health: Item | undefined): NodeDetails['output'] {
  const apply = textOf(health, 'applyOutput');
  const check = textOf(health, 'checkOutput');
  return apply === null && check === null ? null : { apply, check };
}

/** A report's modules (module to version or null), as the report store keeps them; null for none. */
function modulesOf(value: unknown): Record<string, string | null> | null {
  if (!value || typeof value !== 'object') return null;
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).map(([module, version]) => [
      module,
      typeof version === 'string' && version !== noVersion ? version : null,
    ]),
  );
}
