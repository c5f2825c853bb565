import {
  BatchWriteItemCommand,
  PutItemCommand,
  type TransactWriteItem,
  TransactWriteItemsCommand,
} from '@aws-sdk/client-dynamodb';
import { SendMessageBatchCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningApi, startLocalApi } from '../../lib/local/http-server.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import type { FunctionSpec } from '../../lib/server/functions/spec.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
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
  // and the SDK's own connection timeouts: a burst of 300 connections on a busy machine is slow to open
  const sqs = new SQSClient({ region: 'us-east-1', maxAttempts: 1, useQueueUrlAsEndpoint: false });

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

describe('the local API answers as API Gateway does when its Lambda integration passes a quota', () => {
  const slow = (ms: number) => async () => {
    await new Promise((resolve) => setTimeout(resolve, ms));
    return { statusCode: 200, body: '{}' };
  };
  const route = (name: string, path: string, row: object, handler: () => unknown) =>
    ({
      name,
      purpose: 'a quota under test',
      trigger: 'api',
      route: { method: 'POST', path, auth: 'operator', role: 'viewer', bodyBytes: 12 * 1024 * 1024 },
      access: [],
      ...row,
      handler: () => handler,
    }) as unknown as FunctionSpec<Parts>;
  let api: RunningApi;

  beforeAll(async () => {
    api = await startLocalApi({
      port: 0,
      parts: {} as Parts,
      integrationTimeoutMs: 300,
      specs: [
        route('short-timeout', '/short', { timeoutSeconds: 0.1 }, slow(1_000)),
        route('long-timeout', '/long', { timeoutSeconds: 60 }, slow(1_000)),
        route('one-at-a-time', '/one', { reservedConcurrency: 1 }, slow(200)),
      ],
    });
  });
  afterAll(() => api.stop());

  const post = async (path: string, body = '{}') => {
    const answer = await fetch(`${api.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    return { status: answer.status, body: await answer.json() };
  };

  it('a function past its own timeout (Sandbox.Timedout): 502, Internal server error', async () => {
    expect(await post('/short')).toEqual({ status: 502, body: { message: 'Internal server error' } });
  });

  it('an integration past API Gateway’s timeout: 504, Endpoint request timed out', async () => {
    expect(await post('/long')).toEqual({ status: 504, body: { message: 'Endpoint request timed out' } });
  });

  it('past the function’s reserved concurrency: 429', async () => {
    const answers = await Promise.all([post('/one'), post('/one')]);

    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 429]);
    expect(answers.find((answer) => answer.status === 429)?.body).toEqual({ message: 'Too Many Requests' });
  });

  it('a request over 10 MB: 413 from API Gateway, the function never called', async () => {
    const answer = await post('/one', JSON.stringify({ v: 'x'.repeat(10 * 1024 * 1024) }));

    expect(answer).toEqual({ status: 413, body: { message: 'Request Too Long' } });
  });
});
