import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { enforcingQuotas } from '../../lib/local/sdk-quotas.ts';

type Sending = { send(this: object, ...args: unknown[]): unknown };

/**
 * Every DynamoDB and SQS client a test makes holds AWS's quotas as the local runtime's own do
 * (lib/local/sdk-quotas.ts), however the test built it: the quotas' middleware is added to each
 * client before its first request. Tests only; the local runtime adds it where it makes its
 * clients (lib/local/parts.ts).
 */
export function enforceQuotasOnEveryClient(): void {
  const bases = new Set(
    [DynamoDBClient, SQSClient].map((made) => Object.getPrototypeOf(made.prototype) as Sending),
  );
  for (const base of bases) {
    if ((base as { meshQuotas?: true }).meshQuotas) continue;
    const send = base.send;
    const held = new WeakSet<object>();
    base.send = function (this: object, ...args: unknown[]) {
      if (!held.has(this)) {
        held.add(this);
        enforcingQuotas(this);
      }
      return send.apply(this, args);
    };
    Object.defineProperty(base, 'meshQuotas', { value: true });
  }
}
