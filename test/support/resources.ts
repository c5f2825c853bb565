import { randomBytes } from 'node:crypto';
import { makeDynamoDBClient, makeSQSClient } from '../../lib/adapters/aws-clients.ts';
import type { MeshConfig } from '../../lib/config.ts';
import { localResourceNames } from '../../lib/resources.ts';
import { provisionResources } from '../../lib/runtime/provision.ts';

/** Fresh tables and queues under a random prefix, so test files never see each other's items. */
export async function provisionTestResources(label = 't'): Promise<MeshConfig> {
  const region = process.env.AWS_REGION ?? 'us-east-1';
  const dynamodb = makeDynamoDBClient({ region });
  const sqs = makeSQSClient({ region });
  try {
    return await provisionResources(
      { dynamodb, sqs },
      localResourceNames(`${label}-${randomBytes(4).toString('hex')}`),
      region,
    );
  } finally {
    dynamodb.destroy();
    sqs.destroy();
  }
}
