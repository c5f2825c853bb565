import {
  BatchWriteItemCommand,
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

/** Node keys in the identity table; item shapes in identity-keys.ts. */
export class DynamoDBNodeKeyStore implements NodeKeyStore {
  private readonly client: DynamoDBClient;
  private readonly tableName: string;

  constructor(options: { client: DynamoDBClient; tableName: string }) {
    this.client = options.client;
    this.tableName = options.tableName;
  }

  async putKeys(record: NodeKeyRecord & { presenter: string; storedAt: string }): Promise<void> {
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
          }),
        }),
      );
    } catch (error) {
      rethrowStoreFault(error, (cause) => new EnrolmentStoreUnavailableError({ cause }));
    }
  }

  async pruneOtherKeys(node: string, keep: string): Promise<void> {
    const keepSk = identityKeyItemKey(node, keep).sk;
    try {
      const answer = await this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :key)',
          ExpressionAttributeValues: { ':pk': { S: identityPartition(node) }, ':key': { S: 'key#' } },
          ProjectionExpression: 'pk, sk',
          ConsistentRead: true,
        }),
      );
      const stale = (answer.Items ?? []).filter((item) => item.sk?.S !== keepSk);
      for (let start = 0; start < stale.length; start += 25) {
        await this.client.send(
          new BatchWriteItemCommand({
            RequestItems: {
              [this.tableName]: stale.slice(start, start + 25).map((item) => ({
                DeleteRequest: { Key: { pk: item.pk as never, sk: item.sk as never } },
              })),
            },
          }),
        );
      }
    } catch (error) {
      rethrowStoreFault(error, (cause) => new EnrolmentStoreUnavailableError({ cause }));
    }
  }
}
