import {
  BatchWriteItemCommand,
  PutItemCommand,
  type TransactWriteItem,
  TransactWriteItemsCommand,
} from '@aws-sdk/client-dynamodb';
import { SendMessageBatchCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeDynamoDBClient, makeSQSClient } from '../../lib/server/adapters/aws-clients.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import { provisionTestResources } from '../support/resources.ts';

/**
 * DynamoDB's and SQS's quotas over the wire: the ones DynamoDB Local holds itself, and the ones
 * the SDK middleware of lib/local/sdk-quotas.ts holds (on every client a test makes:
 * test/support/integration.setup.ts), each answered with AWS's error.
 */
describe('DynamoDB and SQS answer past their quotas as AWS does', () => {
  let config: MeshConfig;
  // one attempt: a throttled call is seen, not retried away
  const dynamodb = makeDynamoDBClient({ region: 'us-east-1' }, { maxAttempts: 1 });
  const sqs = makeSQSClient({ region: 'us-east-1' }, { maxAttempts: 1 });

  beforeAll(async () => {
    config = await provisionTestResources('quotas');
  });
  afterAll(() => {
    dynamodb.destroy();
    sqs.destroy();
  });

  const item = (pk: string, bytes = 10) => ({ pk: { S: pk }, sk: { S: 'q' }, v: { S: 'x'.repeat(bytes) } });
  const put = (pk: string, bytes = 10): TransactWriteItem => ({
    Put: { TableName: config.inventoryTable, Item: item(pk, bytes) },
  });
  const settled = (calls: readonly Promise<unknown>[]) => Promise.allSettled(calls);
  const reasons = (results: readonly PromiseSettledResult<unknown>[]) =>
    results.flatMap((result) => (result.status === 'rejected' ? [result.reason as Error] : []));

  it('DynamoDB Local itself refuses an item over 400 KB, a transaction over 100 items or 4 MB, a batch over 25', async () => {
    const table = config.inventoryTable;
    await expect(
      dynamodb.send(new PutItemCommand({ TableName: table, Item: item('big', 401 * 1024) })),
    ).rejects.toMatchObject({
      name: 'ValidationException',
      message: 'Item size has exceeded the maximum allowed size',
    });
    await expect(
      dynamodb.send(
        new TransactWriteItemsCommand({ TransactItems: Array.from({ length: 101 }, (_, i) => put(`t${i}`)) }),
      ),
    ).rejects.toMatchObject({
      name: 'ValidationException',
      message: expect.stringMatching(/less than or equal to 100/),
    });
    await expect(
      dynamodb.send(
        new TransactWriteItemsCommand({
          TransactItems: Array.from({ length: 15 }, (_, i) => put(`m${i}`, 300 * 1024)),
        }),
      ),
    ).rejects.toMatchObject({
      name: 'ValidationException',
      message: expect.stringMatching(/cannot exceed 4MB/),
    });
    await expect(
      dynamodb.send(
        new BatchWriteItemCommand({
          RequestItems: {
            [table]: Array.from({ length: 26 }, (_, i) => ({ PutRequest: { Item: item(`b${i}`) } })),
          },
        }),
      ),
    ).rejects.toMatchObject({
      name: 'ValidationException',
      message: expect.stringMatching(/Too many items/),
    });
  });

  it('concurrent transactions on one item: all but the first are cancelled with TransactionConflict', async () => {
    const results = await settled(
      Array.from({ length: 4 }, (_, i) =>
        dynamodb.send(new TransactWriteItemsCommand({ TransactItems: [put(`other${i}`), put('shared')] })),
      ),
    );

    const failures = reasons(results);
    expect(results.filter((result) => result.status === 'fulfilled').length).toBeGreaterThanOrEqual(1);
    expect(failures.length).toBeGreaterThanOrEqual(1);
    for (const failure of failures)
      expect(failure).toMatchObject({
        name: 'TransactionCanceledException',
        message:
          'Transaction cancelled, please refer cancellation reasons for specific reasons [None, TransactionConflict]',
        CancellationReasons: [{ Code: 'None' }, { Code: 'TransactionConflict' }],
      });
  });

  it('a single write to an item a transaction holds fails with TransactionConflictException', async () => {
    const [transaction, single] = await settled([
      dynamodb.send(new TransactWriteItemsCommand({ TransactItems: [put('held'), put('held-too')] })),
      dynamodb.send(new PutItemCommand({ TableName: config.inventoryTable, Item: item('held') })),
    ]);

    expect(transaction?.status).toBe('fulfilled');
    expect(single).toMatchObject({ status: 'rejected', reason: { name: 'TransactionConflictException' } });
  });

  it('SQS refuses a message or a batch over 256 KiB', async () => {
    const queue = config.controlQueueUrl;
    await expect(
      sqs.send(
        new SendMessageCommand({ QueueUrl: queue, MessageGroupId: 'g', MessageBody: 'x'.repeat(262_145) }),
      ),
    ).rejects.toMatchObject({ name: 'InvalidParameterValue' });
    await expect(
      sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: queue,
          Entries: [0, 1, 2].map((i) => ({
            Id: `${i}`,
            MessageGroupId: 'g',
            MessageDeduplicationId: `big-${i}`,
            MessageBody: 'x'.repeat(100 * 1024),
          })),
        }),
      ),
    ).rejects.toMatchObject({ name: 'BatchRequestTooLong' });
  });

  it('a FIFO queue takes 300 calls a second for an action, and throttles the rest', async () => {
    const results = await settled(
      Array.from({ length: 650 }, (_, i) =>
        sqs.send(
          new SendMessageCommand({
            QueueUrl: config.controlQueueUrl,
            MessageGroupId: `g${i % 10}`,
            MessageDeduplicationId: `burst-${i}`,
            MessageBody: `${i}`,
          }),
        ),
      ),
    );

    const failures = reasons(results);
    expect(failures.length).toBeGreaterThan(0);
    expect(new Set(failures.map((failure) => failure.name))).toEqual(new Set(['ThrottlingException']));
  });

  it('with the partition model on, one partition takes 1,000 write units a second', async () => {
    process.env.MESH_PARTITION_THROUGHPUT = 'on';
    try {
      // 100 KB an item, a hundred write units each: 2,500 units, five at a time, in at most two seconds
      const results: PromiseSettledResult<unknown>[] = [];
      for (let i = 0; i < 25; i += 5)
        results.push(
          ...(await settled(
            [0, 1, 2, 3, 4].map((j) =>
              dynamodb.send(
                new PutItemCommand({
                  TableName: config.inventoryTable,
                  Item: { pk: { S: 'hot' }, sk: { S: `${i + j}` }, v: { S: 'x'.repeat(100 * 1024) } },
                }),
              ),
            ),
          )),
        );

      const failures = reasons(results);
      expect(failures.length).toBeGreaterThan(0);
      expect(new Set(failures.map((failure) => failure.name))).toEqual(
        new Set(['ProvisionedThroughputExceededException']),
      );
    } finally {
      delete process.env.MESH_PARTITION_THROUGHPUT;
    }
  });
});
