import {
  type AttributeValue,
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DynamoDBClient,
  PutItemCommand,
  QueryCommand,
} from '@aws-sdk/client-dynamodb';
import { EnrolmentStoreUnavailableError } from '../../core/enrolment/errors.ts';
import type { NodeKeyStore } from '../../core/enrolment/ports.ts';
import type { NodeKeyRecord } from '../../core/host-identity/ports.ts';
import { type Plain, toItem } from './identity-codec.ts';
import { identityKeyItemKey, identityPartition } from './identity-keys.ts';
import { rethrowStoreFault } from './identity-store-faults.ts';

/**
 * A key item may be pruned when it was put for one of the tokens being pruned for (the spent
 * token, or one it replaced), or carries no token mark (put before keys were marked). A key
 * put for any other token — one issued after the spent one — is not the pruner's to remove.
 */
const putForNoToken = 'attribute_not_exists(tokenId)';
const putForOneOf = (placeholders: readonly string[]) => `tokenId IN (${placeholders.join(', ')})`;

/** Node keys in the identity table; item shapes in identity-keys.ts. */
export class DynamoDBNodeKeyStore implements NodeKeyStore {
  private readonly client: DynamoDBClient;
  private readonly tableName: string;

  constructor(options: { client: DynamoDBClient; tableName: string }) {
    this.client = options.client;
    this.tableName = options.tableName;
  }

  async putKeys(
    record: NodeKeyRecord & { presenter: string; storedAt: string; tokenId: string },
  ): Promise<void> {
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: toItem({
            ...identityKeyItemKey(record.node, record.thumbprint),
            node: record.node,
            thumbprint: record.thumbprint,
            signingKey: record.signingKey as Plain,
            sealingKey: record.sealingKey as Plain,
            presenter: record.presenter,
            storedAt: record.storedAt,
            tokenId: record.tokenId,
          }),
        }),
      );
    } catch (error) {
      rethrowStoreFault(error, (cause) => new EnrolmentStoreUnavailableError({ cause }));
    }
  }

  async pruneOtherKeys(node: string, keep: string, tokenIds: readonly string[]): Promise<void> {
    const keepSk = identityKeyItemKey(node, keep).sk;
    const placeholders = tokenIds.map((_, index) => `:token${index}`);
    const values = Object.fromEntries(tokenIds.map((id, index) => [`:token${index}`, { S: id }]));
    const prunable = tokenIds.length > 0 ? `${putForNoToken} OR ${putForOneOf(placeholders)}` : putForNoToken;
    try {
      for (const item of await this.keyItems(node)) {
        const mark = item.tokenId?.S;
        if (item.sk?.S === keepSk || (mark !== undefined && !tokenIds.includes(mark))) continue;
        try {
          // BatchWriteItem cannot carry a condition, and the mark may change between the query
          // and the delete (the same keys put again for a newer token): one conditional delete each.
          await this.client.send(
            new DeleteItemCommand({
              TableName: this.tableName,
              Key: { pk: item.pk as AttributeValue, sk: item.sk as AttributeValue },
              ConditionExpression: prunable,
              ...(tokenIds.length > 0 ? { ExpressionAttributeValues: values } : {}),
            }),
          );
        } catch (error) {
          if (!(error instanceof ConditionalCheckFailedException)) throw error;
        }
      }
    } catch (error) {
      rethrowStoreFault(error, (cause) => new EnrolmentStoreUnavailableError({ cause }));
    }
  }

  private async keyItems(node: string): Promise<Array<Record<string, AttributeValue>>> {
    const items: Array<Record<string, AttributeValue>> = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :key)',
          ExpressionAttributeValues: { ':pk': { S: identityPartition(node) }, ':key': { S: 'key#' } },
          ProjectionExpression: 'pk, sk, tokenId',
          ConsistentRead: true,
          ExclusiveStartKey: start,
        }),
      );
      items.push(...(page.Items ?? []));
      start = page.LastEvaluatedKey;
    } while (start);
    return items;
  }
}
