import { readFileSync } from 'node:fs';
import {
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  type DynamoDBClient,
  PutItemCommand,
  QueryCommand,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningDynamoDBLocal, startDynamoDBLocal } from '../../lib/local/dynamodb-local.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';

// A store of its own: whether the launcher's schema cache took is in that process's output.
let store: RunningDynamoDBLocal;
let client: DynamoDBClient;

beforeAll(async () => {
  store = await startDynamoDBLocal({ quickStart: true });
  client = makeDynamoDBClient({ region: 'us-east-1' }, { endpoint: store.endpoint });
});
afterAll(async () => {
  client?.destroy();
  await store?.stop();
});

/** Two tables made alike keep their schemas in the same bytes: what the cache is keyed by. */
const alike = (name: string): CreateTableCommandInput => ({
  TableName: name,
  BillingMode: 'PAY_PER_REQUEST',
  AttributeDefinitions: [
    { AttributeName: 'pk', AttributeType: 'S' },
    { AttributeName: 'sk', AttributeType: 'S' },
    { AttributeName: 'gsi1pk', AttributeType: 'S' },
  ],
  KeySchema: [
    { AttributeName: 'pk', KeyType: 'HASH' },
    { AttributeName: 'sk', KeyType: 'RANGE' },
  ],
  GlobalSecondaryIndexes: [
    {
      IndexName: 'gsi1',
      KeySchema: [{ AttributeName: 'gsi1pk', KeyType: 'HASH' }],
      Projection: { ProjectionType: 'ALL' },
    },
  ],
});

const item = (pk: string) => ({
  pk: { S: pk },
  sk: { S: 'one' },
  gsi1pk: { S: 'by-gsi1' },
  gsi2pk: { S: 'by-gsi2' },
});

async function eventuallyActive(table: string) {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: table }));
    if (Table?.GlobalSecondaryIndexes?.every((index) => index.IndexStatus === 'ACTIVE')) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${table}'s indexes did not become active within 30 s`);
}

describe('DynamoDB Local through the loopback launcher, each table schema parsed once', () => {
  it('has the cache in place', () => {
    expect(store.schemasParsedOnce).toBe(true);
  });

  it('compiles with C1 alone when it is to live seconds', () => {
    const commandLine = readFileSync(`/proc/${store.pid}/cmdline`, 'utf8').split('\0');
    expect(commandLine).toContain('-XX:TieredStopAtLevel=1');
  });

  it('keeps what one table changes in its schema to that table, though its twin was stored in the same bytes', async () => {
    await client.send(new CreateTableCommand(alike('changed')));
    await client.send(new CreateTableCommand(alike('twin')));
    // both tables' schemas read, and cached, before either changes
    for (const table of ['changed', 'twin']) {
      await client.send(new PutItemCommand({ TableName: table, Item: item('before') }));
    }

    await client.send(
      new UpdateTimeToLiveCommand({
        TableName: 'changed',
        TimeToLiveSpecification: { AttributeName: 'expiresAt', Enabled: true },
      }),
    );
    await client.send(
      new UpdateTableCommand({
        TableName: 'changed',
        AttributeDefinitions: [{ AttributeName: 'gsi2pk', AttributeType: 'S' }],
        GlobalSecondaryIndexUpdates: [
          {
            Create: {
              IndexName: 'gsi2',
              KeySchema: [{ AttributeName: 'gsi2pk', KeyType: 'HASH' }],
              Projection: { ProjectionType: 'ALL' },
            },
          },
        ],
      }),
    );
    // an index being made takes no writes of its keys, on AWS as here
    await eventuallyActive('changed');
    for (const table of ['changed', 'twin']) {
      await client.send(new PutItemCommand({ TableName: table, Item: item('after') }));
    }

    const ttl = async (table: string) =>
      (await client.send(new DescribeTimeToLiveCommand({ TableName: table }))).TimeToLiveDescription;
    expect(await ttl('changed')).toMatchObject({ TimeToLiveStatus: 'ENABLED', AttributeName: 'expiresAt' });
    expect(await ttl('twin')).toEqual({ TimeToLiveStatus: 'DISABLED' });

    const byGsi2 = (table: string) =>
      client.send(
        new QueryCommand({
          TableName: table,
          IndexName: 'gsi2',
          KeyConditionExpression: 'gsi2pk = :key',
          ExpressionAttributeValues: { ':key': { S: 'by-gsi2' } },
        }),
      );
    expect((await byGsi2('changed')).Items?.map((found) => found.pk?.S).sort()).toEqual(['after', 'before']);
    await expect(byGsi2('twin')).rejects.toMatchObject({ name: 'ValidationException' });
    // the twin's own index still answers, from its own schema
    const twin = await client.send(
      new QueryCommand({
        TableName: 'twin',
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :key',
        ExpressionAttributeValues: { ':key': { S: 'by-gsi1' } },
      }),
    );
    expect(twin.Items?.map((found) => found.pk?.S).sort()).toEqual(['after', 'before']);
  });
});
