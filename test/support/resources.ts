import { randomBytes } from 'node:crypto';
import { provisionResources } from '../../lib/local/provision.ts';
import { makeDynamoDBClient, makeSQSClient } from '../../lib/server/adapters/aws-clients.ts';
import { checkConfig, type MeshConfig } from '../../lib/server/setup/config.ts';
import { localResourceNames } from '../../lib/server/setup/resources.ts';

/**
 * Fresh tables and queues under a random prefix, so test files never see each other's items.
 * The SDK finds the run's emulators through AWS_ENDPOINT_URL_* (test/support/integration.setup.ts).
 */
export async function provisionTestResources(
  label = 't',
  settings: Partial<Pick<MeshConfig, 'holdBoundSeconds'>> = {},
  options: { readonly streams?: boolean } = {},
): Promise<MeshConfig> {
  const region = process.env.AWS_REGION ?? 'us-east-1';
  const dynamodb = makeDynamoDBClient({ region });
  const sqs = makeSQSClient({ region });
  try {
    const resources = await provisionResources(
      { dynamodb, sqs },
      localResourceNames(`${label}-${randomBytes(4).toString('hex')}`),
      // Only the summary's tests read the stream; without it DynamoDB Local writes twice as fast.
      { streams: options.streams ?? false },
    );
    return checkConfig({ region, ...resources, ...settings });
  } finally {
    dynamodb.destroy();
    sqs.destroy();
  }
}
