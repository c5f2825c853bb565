#!/usr/bin/env node
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { runLocalRuntime } from '../../lib/local/main.ts';
import { localPartsFor } from '../../lib/local/parts.ts';

/**
 * The local control plane whose DynamoDB requests may take up to a minute. DynamoDB Local on a
 * loaded machine serves one 1 MB page of a provider's partition with 10,000 grants in several
 * seconds, past the 3 s request timeout the product keeps for AWS (lib/server/adapters/aws-clients.ts),
 * where such a page takes a fraction of a second; the bed measures nothing, so it waits.
 */
await runLocalRuntime(process.env, {
  wire: (config) => {
    const endpoint = config.endpoints?.dynamodb ?? process.env.AWS_ENDPOINT_URL_DYNAMODB;
    return localPartsFor(config, {
      clients: {
        dynamodb: new DynamoDBClient({
          region: config.region,
          maxAttempts: 3,
          requestHandler: { connectionTimeout: 1_000, requestTimeout: 60_000 },
          ...(endpoint
            ? { endpoint, credentials: { accessKeyId: 'meshlocal', secretAccessKey: 'meshlocal' } }
            : {}),
        }),
      },
    });
  },
});
