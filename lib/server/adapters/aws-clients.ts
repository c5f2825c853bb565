import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { IoTDataPlaneClient } from '@aws-sdk/client-iot-data-plane';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { S3Client } from '@aws-sdk/client-s3';
import { SFNClient } from '@aws-sdk/client-sfn';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { MeshConfig } from '../setup/config.ts';

/**
 * Short timeouts, because a store that cannot be reached must become a hold or a "try again"
 * quickly rather than keep a host waiting past its patience.
 */
const requestHandler = { connectionTimeout: 1_000, requestTimeout: 3_000, throwOnRequestTimeout: true };

export type ClientOptions = {
  readonly maxAttempts?: number;
  /** An emulator to talk to; otherwise the SDK reads AWS_ENDPOINT_URL(_<SERVICE>) or talks to AWS. */
  readonly endpoint?: string | undefined;
  /** How long a request may go unanswered, for a client nobody waits on. @default 3_000 */
  readonly requestTimeoutMs?: number;
};

/** The emulators accept any credentials; these keep the SDK from looking for real ones. */
const emulatorCredentials = { accessKeyId: 'meshlocal', secretAccessKey: 'meshlocal' };

function common(region: string, options: ClientOptions) {
  return {
    region,
    maxAttempts: options.maxAttempts ?? 3,
    requestHandler:
      options.requestTimeoutMs === undefined
        ? requestHandler
        : { ...requestHandler, requestTimeout: options.requestTimeoutMs },
    ...(options.endpoint ? { endpoint: options.endpoint, credentials: emulatorCredentials } : {}),
  };
}

export function makeDynamoDBClient(
  config: Pick<MeshConfig, 'region' | 'endpoints'>,
  options: ClientOptions = {},
) {
  return new DynamoDBClient(common(config.region, { endpoint: config.endpoints?.dynamodb, ...options }));
}

export function makeSQSClient(config: Pick<MeshConfig, 'region' | 'endpoints'>, options: ClientOptions = {}) {
  // Emulators hand out queue URLs on hosts that do not resolve (sqs.<region>.localhost); the
  // configured endpoint is the one to call, and on AWS the two are the same.
  return new SQSClient({
    ...common(config.region, { endpoint: config.endpoints?.sqs, ...options }),
    useQueueUrlAsEndpoint: false,
  });
}

/**
 * For the push-run invoke only: one attempt, since a retried invoke could push twice, and no
 * request timeout, since a waited invoke lasts as long as the push; its caller lets it go.
 */
export function makePushRunClient(config: Pick<MeshConfig, 'region'>) {
  return new LambdaClient({
    ...common(config.region, { maxAttempts: 1 }),
    requestHandler: { ...requestHandler, requestTimeout: 0, throwOnRequestTimeout: false },
  });
}

export function makeSFNClient(config: Pick<MeshConfig, 'region'>) {
  return new SFNClient({ region: config.region });
}

/** The IoT data plane at the account's data endpoint; two attempts, so a broker away costs a push little. */
export function makeIotDataClient(config: Pick<MeshConfig, 'region'>, endpoint: string) {
  return new IoTDataPlaneClient({
    ...common(config.region, { maxAttempts: 2 }),
    endpoint: `https://${endpoint}`,
  });
}

/**
 * PutEvents on the stack's bus: one attempt a call, since the events' sink retries the entries
 * that failed within its own deadline; the endpoint is AWS's, or AWS_ENDPOINT_URL(_EVENTBRIDGE)'s.
 */
export function makeEventBridgeClient(config: Pick<MeshConfig, 'region'>) {
  return new EventBridgeClient(common(config.region, { maxAttempts: 1, requestTimeoutMs: 1_500 }));
}

/**
 * The release bucket's: it presigns transfers and reads an object's head; no body is computed
 * a checksum of by the SDK (a presigned PUT carries the manifest's SHA-256 instead).
 */
export function makeS3Client(config: Pick<MeshConfig, 'region'>) {
  return new S3Client({
    region: config.region,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}
