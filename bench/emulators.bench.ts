import { ConditionalCheckFailedException, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { DeleteMessageCommand, ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { makeDynamoDBClient, makeSQSClient } from '../lib/server/adapters/aws-clients.ts';
import { benchEnvironment } from './support/environment.ts';
import { median, percentile, sample } from './support/stats.ts';
import type { BenchTable } from './support/table.ts';

/** The floor under everything else: what one round trip to each emulator costs here. */
export async function run(): Promise<BenchTable[]> {
  const environment = await benchEnvironment();
  try {
    const config = await environment.provision('bench');
    const dynamodb = makeDynamoDBClient(config);
    const sqs = makeSQSClient(config);
    const count = 200;

    const put = (index: number) =>
      dynamodb.send(
        new PutItemCommand({
          TableName: config.inventoryTable,
          Item: { pk: { S: `item#${index}` }, sk: { S: 'x' } },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    const conditionalWrite = await sample(count, put);
    const refusedWrite = await sample(count, (index) =>
      put(index).catch((error: unknown) => {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
      }),
    );
    const roundTrip = await sample(count, async (index) => {
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: config.controlQueueUrl,
          MessageGroupId: `g${index}`,
          MessageBody: `m${index}`,
        }),
      );
      const received = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: config.controlQueueUrl,
          MaxNumberOfMessages: 1,
          WaitTimeSeconds: 1,
        }),
      );
      const [message] = received.Messages ?? [];
      await sqs.send(
        new DeleteMessageCommand({ QueueUrl: config.controlQueueUrl, ReceiptHandle: message?.ReceiptHandle }),
      );
    });
    dynamodb.destroy();
    sqs.destroy();

    const row = (name: string, times: number[]) => [
      name,
      times.length,
      median(times),
      percentile(times, 90),
      percentile(times, 99),
    ];
    return [
      {
        title: 'Emulator round trips (ms)',
        columns: ['operation', 'n', 'median', 'p90', 'p99'],
        rows: [
          row('DynamoDB Local conditional put (accepted)', conditionalWrite),
          row('DynamoDB Local conditional put (refused, ALL_OLD)', refusedWrite),
          row('fauxqs send + receive + delete (FIFO)', roundTrip),
        ],
      },
    ];
  } finally {
    await environment.stop();
  }
}
