import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { MeshConfig } from '../config.ts';

/**
 * Short timeouts, because a store that cannot be reached must become a hold or a "try again"
 * quickly rather than keep a host waiting past its patience.
 */
const requestHandler = { connectionTimeout: 1_000, requestTimeout: 3_000, throwOnRequestTimeout: true };

export type ClientOptions = {
  readonly maxAttempts?: number;
  /** Only for talking to one emulator explicitly; otherwise the SDK reads AWS_ENDPOINT_URL(_<SERVICE>). */
  readonly endpoint?: string;
};

const emulatorCredentials = { accessKeyId: 'meshlocal', secretAccessKey: 'meshlocal' };

function common(config: Pick<MeshConfig, 'region'>, options: ClientOptions) {
  return {
    region: config.region,
    maxAttempts: options.maxAttempts ?? 3,
    requestHandler,
    ...(options.endpoint ? { endpoint: options.endpoint, credentials: emulatorCredentials } : {}),
  };
}

export function makeDynamoDBClient(config: Pick<MeshConfig, 'region'>, options: ClientOptions = {}) {
  return new DynamoDBClient(common(config, options));
}

export function makeSQSClient(config: Pick<MeshConfig, 'region'>, options: ClientOptions = {}) {
  // Emulators hand out queue URLs on hosts that do not resolve (sqs.<region>.localhost); the
  // configured endpoint is the one to call, and on AWS the two are the same.
  return new SQSClient({ ...common(config, options), useQueueUrlAsEndpoint: false });
}
