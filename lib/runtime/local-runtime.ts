import { resolve } from 'node:path';
import { makeDynamoDBClient, makeSQSClient } from '../adapters/aws-clients.ts';
import { configEnvironment, type MeshConfig } from '../config.ts';
import { localResourceNames } from '../resources.ts';
import { type RunningEmulators, startEmulators, useEndpoints } from './emulators.ts';
import { type RunningApi, startLocalApi } from './http-server.ts';
import { assertPortFree } from './ports.ts';
import { provisionResources } from './provision.ts';
import { type LocalService, localServices } from './services.ts';

export type LocalRuntimeOptions = {
  readonly port: number;
  readonly host?: string;
  /** Where DynamoDB Local and fauxqs keep their data; in memory when absent. */
  readonly dataDir?: string;
  readonly resourcePrefix?: string;
  readonly services?: readonly LocalService[];
  readonly env?: NodeJS.ProcessEnv;
  readonly onProgress?: (line: string) => void;
};

export type RunningLocalRuntime = {
  readonly url: string;
  readonly dataDir: string | undefined;
  readonly config: MeshConfig;
  readonly emulators: RunningEmulators;
  stop(): Promise<void>;
};

/**
 * The whole control plane in one process: emulators (unless endpoints are given), resources
 * created idempotently, the API served from the route table and the background services.
 */
export async function startLocalRuntime(options: LocalRuntimeOptions): Promise<RunningLocalRuntime> {
  const env = options.env ?? process.env;
  const progress = options.onProgress ?? (() => undefined);
  const dataDir = options.dataDir ? resolve(options.dataDir) : undefined;
  if (options.port !== 0) await assertPortFree(options.port, 'MESH_PORT', options.host);

  progress('starting the emulators');
  const emulators = await startEmulators({ env, ...(dataDir ? { dataDir } : {}) });
  const stack: Array<() => Promise<void>> = [() => emulators.stop()];
  const stopAll = async () => {
    while (stack.length > 0) await stack.pop()?.();
  };
  try {
    useEndpoints(emulators.endpoints, env);
    const region = env.AWS_REGION ?? 'us-east-1';
    const dynamodb = makeDynamoDBClient({ region });
    const sqs = makeSQSClient({ region });
    progress('creating tables and queues');
    const config = await provisionResources(
      { dynamodb, sqs },
      localResourceNames(options.resourcePrefix ?? 'mesh'),
      region,
    );
    dynamodb.destroy();
    sqs.destroy();
    Object.assign(env, configEnvironment(config));

    for (const service of options.services ?? localServices) {
      progress(`starting ${service.name}`);
      const running = await service.start(config);
      stack.push(() => running.stop());
    }
    const api: RunningApi = await startLocalApi({
      port: options.port,
      ...(options.host ? { host: options.host } : {}),
    });
    stack.push(() => api.stop());
    return { url: api.url, dataDir, config, emulators, stop: stopAll };
  } catch (error) {
    await stopAll();
    throw error;
  }
}
