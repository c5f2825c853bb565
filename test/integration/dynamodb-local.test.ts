import {
  ConditionalCheckFailedException,
  GetItemCommand,
  PutItemCommand,
  TransactionCanceledException,
  TransactWriteItemsCommand,
} from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import { provisionTestResources } from '../support/resources.ts';

describe('DynamoDB Local over the wire', () => {
  let config: MeshConfig;
  const client = makeDynamoDBClient({ region: 'us-east-1' });

  beforeAll(async () => {
    config = await provisionTestResources('ddb');
  });
  afterAll(() => client.destroy());

  it('returns the existing item (ALL_OLD) when a conditional write fails', async () => {
    const item = { pk: { S: 'token#t1' }, sk: { S: 'token' }, claimedBy: { S: 'key-a' } };
    await client.send(new PutItemCommand({ TableName: config.inventoryTable, Item: item }));

    const attempt = client.send(
      new PutItemCommand({
        TableName: config.inventoryTable,
        Item: { ...item, claimedBy: { S: 'key-b' } },
        ConditionExpression: 'attribute_not_exists(pk)',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );

    const error = await attempt.catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConditionalCheckFailedException);
    expect((error as ConditionalCheckFailedException).Item).toEqual(item);
  });

  it('commits a transaction across the inventory and identity tables, or neither', async () => {
    const write = (claimedBy: string) =>
      new TransactWriteItemsCommand({
        TransactItems: [
          {
            Put: {
              TableName: config.inventoryTable,
              Item: { pk: { S: 'node#alpha' }, sk: { S: 'node' }, enrolledBy: { S: claimedBy } },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
          {
            Put: {
              TableName: config.identityTable,
              Item: { pk: { S: 'node#alpha' }, sk: { S: 'key' }, key: { S: claimedBy } },
            },
          },
        ],
      });

    await client.send(write('key-a'));
    const second = await client.send(write('key-b')).catch((caught: unknown) => caught);

    expect(second).toBeInstanceOf(TransactionCanceledException);
    const identity = await client.send(
      new GetItemCommand({
        TableName: config.identityTable,
        Key: { pk: { S: 'node#alpha' }, sk: { S: 'key' } },
      }),
    );
    expect(identity.Item?.key?.S).toBe('key-a');
  });
});
