import { type RunningEmulators, startEmulators } from '../../lib/local/emulators.ts';
import { provisionResources } from '../../lib/local/provision.ts';
import { makeDynamoDBClient, makeSQSClient } from '../../lib/server/adapters/aws-clients.ts';
import { checkConfig, type MeshConfig } from '../../lib/server/setup/config.ts';
import { localResourceNames } from '../../lib/server/setup/resources.ts';

export type BenchEnvironment = {
  readonly emulators: RunningEmulators;
  /** Provisions a fresh set of tables and queues under `prefix` and answers their configuration. */
  provision(prefix: string, settings?: Partial<MeshConfig>): Promise<MeshConfig>;
  stop(): Promise<void>;
};

/** The emulators a bench runs against (in memory), and configurations that point at them. */
export async function benchEnvironment(): Promise<BenchEnvironment> {
  const emulators = await startEmulators();
  const located = { region: 'us-east-1', endpoints: emulators.endpoints };
  return {
    emulators,
    async provision(prefix, settings = {}) {
      const dynamodb = makeDynamoDBClient(located);
      const sqs = makeSQSClient(located);
      try {
        const resources = await provisionResources({ dynamodb, sqs }, localResourceNames(prefix));
        return checkConfig({ ...located, ...resources, logLevel: 'ERROR', ...settings });
      } finally {
        dynamodb.destroy();
        sqs.destroy();
      }
    },
    stop: () => emulators.stop(),
  };
}
