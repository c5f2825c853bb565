import { randomBytes } from 'node:crypto';
import { CreateQueueCommand, GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { afterAll, describe, expect, it } from 'vitest';
import { provisionResources } from '../../lib/local/provision.ts';
import { makeDynamoDBClient, makeSQSClient } from '../../lib/server/adapters/aws-clients.ts';
import { controlQueue, localResourceNames } from '../../lib/server/setup/resources.ts';

describe('provisionResources', () => {
  const dynamodb = makeDynamoDBClient({ region: 'us-east-1' });
  const sqs = makeSQSClient({ region: 'us-east-1' });
  afterAll(() => {
    dynamodb.destroy();
    sqs.destroy();
  });

  it('is idempotent, and brings a queue kept from an earlier run with other attributes to the description', async () => {
    const names = localResourceNames(`prov-${randomBytes(4).toString('hex')}`);
    await sqs.send(
      new CreateQueueCommand({
        QueueName: names.controlQueue,
        Attributes: { FifoQueue: 'true', ContentBasedDeduplication: 'true', VisibilityTimeout: '30' },
      }),
    );

    const first = await provisionResources({ dynamodb, sqs }, names);
    const second = await provisionResources({ dynamodb, sqs }, names);

    expect(second).toEqual(first);
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: first.controlQueueUrl, AttributeNames: ['All'] }),
    );
    expect(Attributes).toMatchObject({
      VisibilityTimeout: String(controlQueue.visibilityTimeoutSeconds),
      MaximumMessageSize: String(controlQueue.maximumMessageBytes),
    });
    expect(JSON.parse(Attributes?.RedrivePolicy ?? '{}')).toMatchObject({ maxReceiveCount: 50 });
  });
});
