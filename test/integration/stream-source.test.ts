import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type RunningStreamSource,
  type StreamSourceOptions,
  startStreamSource,
} from '../../lib/local/stream-source.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import { provisionTestResources } from '../support/resources.ts';

/**
 * The local event source over DynamoDB Local's stream, read as the summary's mapping reads it.
 * DynamoDB Local numbers stream records across all its tables, so an iterator taken while this
 * table's shard was empty points before a record that other tables' writes have moved on from:
 * DynamoDB Local refuses it (TrimmedDataAccessException) and the source must take a fresh one.
 * In a whole test run other files write all the time, which is how the summary's test first met it.
 */
let streamed: MeshConfig;
let other: MeshConfig;
const dynamodb = makeDynamoDBClient({ region: process.env.AWS_REGION ?? 'us-east-1' });
const handed: DynamoDBRecord[] = [];
const errors: Error[] = [];
let source: RunningStreamSource | undefined;

beforeAll(async () => {
  streamed = await provisionTestResources('stream', {}, { streams: true });
  other = await provisionTestResources('busy');
});

afterAll(async () => {
  await source?.stop();
  dynamodb.destroy();
});

/** A source over the streamed table that keeps what it is handed in `handed`. */
const startSource = (options: Pick<StreamSourceOptions, 'idleMs' | 'idleMaxMs' | 'onError'>) =>
  startStreamSource({
    dynamodb,
    config: streamed,
    tableName: streamed.inventoryTable,
    handler: async (event) => {
      handed.push(...event.Records);
      return { state: {} };
    },
    functionName: 'stream-source-test',
    ...options,
  });

const put = (table: string, pk: string, sk: string) =>
  dynamodb.send(new PutItemCommand({ TableName: table, Item: { pk: { S: pk }, sk: { S: sk } } }));

describe('the local stream source', () => {
  it('hands on every change made after it took its iterators, whatever other tables wrote meanwhile', async () => {
    source = startSource({ idleMs: 20, onError: (error) => errors.push(error) });
    // its iterators are taken on an empty shard
    await source.caughtUp();

    for (let index = 0; index < 30; index += 1)
      await put(other.inventoryTable, `node#other-${index}`, 'node');
    await put(streamed.inventoryTable, 'node#a', 'node');
    await put(streamed.inventoryTable, 'node#b', 'node');
    await put(streamed.inventoryTable, 'pushes', 'not-counted');
    await source.caughtUp();
    await put(streamed.inventoryTable, 'node#c', 'node');
    await source.caughtUp();

    // a and b may sit in two shards handed on at once: their order between them is not kept, as on AWS
    const keys = handed.map((record) => record.dynamodb?.Keys?.pk?.S);
    expect(keys.slice(0, 2).sort()).toEqual(['node#a', 'node#b']);
    expect(keys.slice(2)).toEqual(['node#c']);
    // refused iterators are renewed, not reported: the source saw nothing wrong
    expect(errors).toEqual([]);
  });

  it('cuts its idle wait short for a caller waiting on it', async () => {
    await source?.stop();
    handed.length = 0;
    // far past this test's timeout: only caughtUp() cutting the wait short ends it in time
    source = startSource({ idleMs: 60_000, idleMaxMs: 600_000 });
    await source.caughtUp();
    const before = handed.length;

    await put(streamed.inventoryTable, 'node#d', 'node');
    await source.caughtUp();

    expect(handed.slice(before).map((record) => record.dynamodb?.Keys?.pk?.S)).toEqual(['node#d']);
  }, 20_000);
});
