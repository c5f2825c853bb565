import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeSQSClient } from '../../lib/server/adapters/aws-clients.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import { provisionTestResources } from '../support/resources.ts';

describe('fauxqs FIFO over the wire', () => {
  let config: MeshConfig;
  const client = makeSQSClient({ region: 'us-east-1' });

  beforeAll(async () => {
    config = await provisionTestResources('sqs');
  });
  afterAll(() => client.destroy());

  const send = (group: string, body: string) =>
    client.send(
      new SendMessageCommand({ QueueUrl: config.controlQueueUrl, MessageGroupId: group, MessageBody: body }),
    );
  const receive = async (visibility = 30) =>
    (
      await client.send(
        new ReceiveMessageCommand({
          QueueUrl: config.controlQueueUrl,
          MaxNumberOfMessages: 10,
          VisibilityTimeout: visibility,
          WaitTimeSeconds: 0,
          MessageSystemAttributeNames: ['MessageGroupId', 'ApproximateReceiveCount'],
        }),
      )
    ).Messages ?? [];

  it('delivers in group order, keeps a group blocked while its head is in flight, lets other groups go', async () => {
    await send('report:a', 'a1');
    await send('report:a', 'a2');
    await send('report:b', 'b1');

    const first = await receive();
    const bodies = first.map((message) => message.Body);
    expect(bodies).toContain('a1');
    expect(bodies).toContain('b1');
    expect(bodies).not.toContain('a2');

    const again = await receive();
    expect(again.map((message) => message.Body)).not.toContain('a2');

    for (const message of first) {
      await client.send(
        new DeleteMessageCommand({ QueueUrl: config.controlQueueUrl, ReceiptHandle: message.ReceiptHandle }),
      );
    }
    const next = await receive();
    expect(next.map((message) => message.Body)).toEqual(['a2']);
    await client.send(
      new DeleteMessageCommand({ QueueUrl: config.controlQueueUrl, ReceiptHandle: next[0]?.ReceiptHandle }),
    );
  });

  it('honours ChangeMessageVisibility: a message set to 0 comes back at once, counted as received twice', async () => {
    await send('build:7', 'b7');
    const [held] = await receive(60);
    expect(held?.Body).toBe('b7');
    expect(await receive()).toEqual([]);

    await client.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: config.controlQueueUrl,
        ReceiptHandle: held?.ReceiptHandle,
        VisibilityTimeout: 0,
      }),
    );
    const [back] = await receive();
    expect(back?.Body).toBe('b7');
    expect(back?.Attributes?.ApproximateReceiveCount).toBe('2');
  });
});
