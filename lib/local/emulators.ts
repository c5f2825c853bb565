import { join } from 'node:path';
import { makePrivateFolder } from './data-folder.ts';
import { type RunningDynamoDBLocal, startDynamoDBLocal } from './dynamodb-local.ts';
import { type RunningFauxqs, startLoopbackFauxqs } from './fauxqs.ts';

/**
 * The one place that starts and stops the emulators, used by the test setup and the local
 * runtime alike. A service whose endpoint is already given (AWS_ENDPOINT_URL, or
 * AWS_ENDPOINT_URL_DYNAMODB / AWS_ENDPOINT_URL_SQS, LocalStack on :4566 say) is not emulated.
 * Both emulators listen on loopback only, and their data folder is this user's only (0700,
 * files 0600).
 */
export type EmulatorOptions = {
  /** Keep data in this folder across restarts; in memory when absent. */
  readonly dataDir?: string;
  /** Services already running elsewhere (read from the environment by the caller); these are not emulated. */
  readonly given?: Partial<Endpoints>;
};

export type Endpoints = { readonly dynamodb: string; readonly sqs: string };

export type RunningEmulators = {
  readonly endpoints: Endpoints;
  /** Which services this process started, as opposed to found already running. */
  readonly emulated: { readonly dynamodb: boolean; readonly sqs: boolean };
  readonly dynamodbLocal: RunningDynamoDBLocal | undefined;
  stop(): Promise<void>;
};

export function givenEndpoints(env: NodeJS.ProcessEnv = process.env): Partial<Endpoints> {
  const dynamodb = env.AWS_ENDPOINT_URL_DYNAMODB || env.AWS_ENDPOINT_URL || undefined;
  const sqs = env.AWS_ENDPOINT_URL_SQS || env.AWS_ENDPOINT_URL || undefined;
  return { ...(dynamodb ? { dynamodb } : {}), ...(sqs ? { sqs } : {}) };
}

export async function startEmulators(options: EmulatorOptions = {}): Promise<RunningEmulators> {
  const given = options.given ?? {};
  if (options.dataDir) makePrivateFolder(options.dataDir);
  const dynamodbLocal = given.dynamodb
    ? undefined
    : await startDynamoDBLocal(options.dataDir ? { dataDir: join(options.dataDir, 'dynamodb') } : {});
  let fauxqs: RunningFauxqs | undefined;
  try {
    fauxqs = given.sqs
      ? undefined
      : await startLoopbackFauxqs(options.dataDir ? { dataDir: join(options.dataDir, 'sqs') } : {});
  } catch (error) {
    await Promise.allSettled([dynamodbLocal?.stop(), fauxqs?.stop()]);
    throw error;
  }
  const endpoints: Endpoints = {
    dynamodb: given.dynamodb ?? (dynamodbLocal as RunningDynamoDBLocal).endpoint,
    sqs: given.sqs ?? `http://127.0.0.1:${fauxqs?.port}`,
  };
  return {
    endpoints,
    emulated: { dynamodb: dynamodbLocal !== undefined, sqs: fauxqs !== undefined },
    dynamodbLocal,
    async stop() {
      await Promise.allSettled([dynamodbLocal?.stop(), fauxqs?.stop()]);
    },
  };
}
