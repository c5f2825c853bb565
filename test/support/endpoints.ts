import type { Endpoints } from '../../lib/local/emulators.ts';

/**
 * Points every AWS SDK client a test makes at the run's emulators, with stand-in credentials
 * when none are configured (the emulators accept any). Tests only: the control plane itself is
 * told its endpoints through its configuration.
 */
export function useEndpoints(endpoints: Endpoints, env: NodeJS.ProcessEnv = process.env): void {
  env.AWS_ENDPOINT_URL_DYNAMODB = endpoints.dynamodb;
  // DynamoDB Local answers the streams API at the table's endpoint
  env.AWS_ENDPOINT_URL_DYNAMODB_STREAMS = endpoints.dynamodb;
  env.AWS_ENDPOINT_URL_SQS = endpoints.sqs;
  env.AWS_REGION ??= 'us-east-1';
  if (!env.AWS_ACCESS_KEY_ID && !env.AWS_PROFILE) {
    env.AWS_ACCESS_KEY_ID = 'meshlocal';
    env.AWS_SECRET_ACCESS_KEY = 'meshlocal';
  }
}
