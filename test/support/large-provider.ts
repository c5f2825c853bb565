import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchWriteCommand, type DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  assignmentItem,
  carrierItem,
  consumedByItem,
  grantItem,
  markedKey,
  markKey,
  nodeItem,
  nodeKey,
  provisionItem,
  relationItem,
} from '../../lib/server/adapters/dynamodb/mesh-items.ts';
import { documentClient, type Item } from '../../lib/server/adapters/dynamodb/requests.ts';
import { mapLimit } from '../../lib/server/core/map-limit.ts';
import { provisionName } from '../../lib/server/core/mesh/declaration.ts';
import type { Provision, SealingKey } from '../../lib/server/core/mesh/model.ts';
import { enrolmentItemFor, sealedProvision, testSealing } from './sealing.ts';

/**
 * A client for seeding only: DynamoDB Local on a loaded machine takes seconds over a batch of
 * 25, past the control plane's own 3 s request timeout, which is the product's and stays.
 */
export function seedingClient(endpoint: string | undefined, region = 'us-east-1'): DynamoDBDocumentClient {
  return documentClient(
    new DynamoDBClient({
      region,
      maxAttempts: 5,
      requestHandler: { requestTimeout: 60_000 },
      ...(endpoint
        ? { endpoint, credentials: { accessKeyId: 'meshlocal', secretAccessKey: 'meshlocal' } }
        : {}),
    }),
  );
}

/** Consumer node names that sort in order: `web-00000`, `web-00001`, … */
export const consumerName = (index: number) => `web-${String(index).padStart(5, '0')}`;

/**
 * `count` consumer nodes, each with module `web` consuming `provider/module` and its provision
 * already minted (as a push of each would have left them), written through the store as the
 * mesh's own items: the consumer's node, assignment, carrier, relation and provision, and on the
 * provider's side the relation and the grant. The provider's node item must exist (it is made
 * by `mesh node add` and `assign`); its consumer count is set to `count` and it is marked
 * behind, so the next push composes it with every grant. Seeding 10,000 consumers through
 * `consume` and a push of each would take the test minutes; the items are the same. With
 * `consumerSide: false` only the provider's side is written (a third of the items), which is
 * all the provider's compose, its send and its host read.
 */
export async function seedConsumers(
  client: DynamoDBDocumentClient,
  tableName: string,
  provider: { readonly node: string; readonly module: string; readonly kind: string },
  count: number,
  options: {
    /** The first consumer's index. @default 0 */
    readonly first?: number;
    /** The consumers' own items too; without them only what the provider's compose reads. @default true */
    readonly consumerSide?: boolean;
    /** The provider's enrolled sealing key, which each grant is sealed to. @default the test key */
    readonly providerKey?: SealingKey;
  } = {},
): Promise<void> {
  const first = options.first ?? 0;
  const createdAt = '2026-01-01T00:00:00.000Z';
  const items: Item[] = [];
  for (let index = first; index < first + count; index += 1) {
    const node = consumerName(index);
    const name = provisionName(node, 'web');
    const provision: Provision = await sealedProvision(
      {
        consumerNode: node,
        consumerModule: 'web',
        providerNode: provider.node,
        providerModule: provider.module,
        kind: provider.kind,
        resource: name,
        user: name,
        mintedAt: createdAt,
      },
      { consumer: testSealing.key, provider: options.providerKey ?? testSealing.key },
      options.consumerSide === false ? 'provider' : 'both',
    );
    items.push(consumedByItem(provision), grantItem(provision));
    if (options.consumerSide === false) continue;
    items.push(
      enrolmentItemFor(node),
      { ...nodeItem(node, createdAt), modules: 1, consumes: 1 },
      assignmentItem(node, { module: 'web', version: null, provides: null }),
      carrierItem('web', node, null),
      relationItem(node, {
        consumerModule: 'web',
        providerNode: provider.node,
        providerModule: provider.module,
        kind: provider.kind,
      }),
      provisionItem(provision),
    );
  }
  await batchPut(client, tableName, items);
  await client.send(
    new UpdateCommand({
      TableName: tableName,
      Key: nodeKey(provider.node),
      UpdateExpression: 'ADD consumers :count',
      ExpressionAttributeValues: { ':count': count },
    }),
  );
  await batchPut(client, tableName, [
    { ...markKey(provider.node), marks: 1, node: provider.node, markedAt: createdAt },
    { ...markedKey(provider.node), node: provider.node, markedAt: createdAt },
  ]);
}

/** BatchWriteItem, 25 items a call, 4 calls at a time, until nothing is left unprocessed. */
export async function batchPut(client: DynamoDBDocumentClient, tableName: string, items: readonly Item[]) {
  const batches: Item[][] = [];
  for (let at = 0; at < items.length; at += 25) batches.push(items.slice(at, at + 25));
  await mapLimit(batches, 4, async (batch) => {
    let pending = batch.map((Item) => ({ PutRequest: { Item } }));
    while (pending.length > 0) {
      const answer = await client.send(new BatchWriteCommand({ RequestItems: { [tableName]: pending } }));
      pending = (answer.UnprocessedItems?.[tableName] ?? []) as typeof pending;
    }
  });
}
