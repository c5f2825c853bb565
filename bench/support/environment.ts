import { makeDynamoDBClient, makeSQSClient } from '../../lib/adapters/aws-clients.ts';
import { checkConfig, type MeshConfig } from '../../lib/config.ts';
import { localResourceNames } from '../../lib/resources.ts';
import { type RunningEmulators, startEmulators } from '../../lib/runtime/emulators.ts';
import { provisionResources } from '../../lib/runtime/provision.ts';

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
