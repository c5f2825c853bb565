import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { TokenFacts } from '../../core/enrolment/token-state.ts';
import type { Assignment, Relation } from '../../core/mesh/model.ts';
import type { MeshEdge } from '../../core/views/views.ts';
import { nodePartition } from './keys.ts';
import { assignmentFrom, relationFrom } from './mesh-items.ts';
import { type Item, queryAll } from './requests.ts';

/**
 * One node's partition read whole (one strongly consistent Query) and sorted by what each item
 * is, for the read models. Items are told apart by their sort key alone, as each area documents
 * it (keys.ts); a kind of item this does not know is kept in `items` and otherwise left alone,
 * so an area that adds one breaks nothing here.
 */
export type NodePartition = {
  readonly node: string;
  readonly items: readonly Item[];
  /** The items whose sort key has no `#`, by sort key: `node`, `mark`, `delivery`, `token`, `enrolment`, `report`, … */
  readonly single: ReadonlyMap<string, Item>;
  readonly assignments: readonly Assignment[];
  readonly relations: readonly Relation[];
  /** `<consumer module>#<provider node>#<provider module>` of each provision minted for this node. */
  readonly minted: ReadonlySet<string>;
  /** The grants issued from this node's providers, as edges (always minted). */
  readonly grants: readonly MeshEdge[];
  /** Every relation to this node's providers (its `consumedby#` items), minted or waiting. */
  readonly consumers: readonly MeshEdge[];
};

export async function readNodePartition(
  client: DynamoDBDocumentClient,
  tableName: string,
  node: string,
): Promise<NodePartition> {
  const items = await queryAll(client, 'the inventory table', {
    TableName: tableName,
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': nodePartition(node) },
    ConsistentRead: true,
  });
  return partitionOf(node, items);
}

export function partitionOf(node: string, items: readonly Item[]): NodePartition {
  const single = new Map<string, Item>();
  const assignments: Assignment[] = [];
  const relations: Relation[] = [];
  const minted = new Set<string>();
  const grants: MeshEdge[] = [];
  const dependents: Item[] = [];
  for (const item of items) {
    const sk = String(item.sk);
    const [kind, ...rest] = sk.split('#');
    if (rest.length === 0) single.set(sk, item);
    else if (kind === 'module') assignments.push(assignmentFrom(item));
    else if (kind === 'consumes') relations.push(relationFrom(item));
    else if (kind === 'provision') minted.add(rest.join('#'));
    else if (kind === 'grant') grants.push(grantEdge(node, item));
    else if (kind === 'consumedby') dependents.push(item);
  }
  const kinds = new Map(assignments.map((a) => [a.module, a.provides ?? '']));
  const granted = new Set(grants.map((g) => `${g.provider.module}<${g.consumer.node}/${g.consumer.module}`));
  const consumers = dependents.map((item) => {
    const edge = grantEdge(node, item);
    const key = `${edge.provider.module}<${edge.consumer.node}/${edge.consumer.module}`;
    return { ...edge, kind: kinds.get(edge.provider.module) ?? '', minted: granted.has(key) };
  });
  return { node, items, single, assignments, relations, minted, grants, consumers };
}

/** The node's relations as edges, each minted when its provision is in the partition. */
export function edgesOf(partition: NodePartition): MeshEdge[] {
  return partition.relations.map((relation) => ({
    consumer: { node: partition.node, module: relation.consumerModule },
    provider: { node: relation.providerNode, module: relation.providerModule },
    kind: relation.kind,
    minted: partition.minted.has(
      `${relation.consumerModule}#${relation.providerNode}#${relation.providerModule}`,
    ),
  }));
}

function grantEdge(node: string, item: Item): MeshEdge {
  const text = (name: string) => (typeof item[name] === 'string' ? (item[name] as string) : '');
  return {
    consumer: { node: text('consumerNode'), module: text('consumerModule') },
    provider: { node, module: text('providerModule') },
    kind: text('kind'),
    minted: true,
  };
}

/** The token item as the enrolment area keeps it (token-store.ts); undefined when there is none or it is unreadable. */
export function tokenOf(item: Item | undefined): TokenFacts | undefined {
  if (!item || typeof item.tokenId !== 'string' || typeof item.validUntilMs !== 'number') return undefined;
  const text = (name: string) => (typeof item[name] === 'string' ? { [name]: item[name] as string } : {});
  return {
    node: String(item.node ?? ''),
    tokenId: item.tokenId,
    issuedAt: String(item.issuedAt ?? ''),
    validUntilMs: item.validUntilMs,
    replaced: Array.isArray(item.replaced) ? (item.replaced as TokenFacts['replaced']) : [],
    ...text('claimedBy'),
    ...text('claimedAt'),
    ...(typeof item.leaseUntilMs === 'number' ? { leaseUntilMs: item.leaseUntilMs } : {}),
    ...text('spentBy'),
    ...text('spentAt'),
    ...text('revokedAt'),
  };
}
