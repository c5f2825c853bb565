import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { DynamoDBAuditTrail } from '../../lib/server/adapters/audit/audit-trail.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import { documentClient } from '../../lib/server/adapters/dynamodb/requests.ts';
import { DynamoDBTokenStore } from '../../lib/server/adapters/enrolment/token-store.ts';
import { tokenIssueHandler } from '../../lib/server/api/handlers/enrolment.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { NodeUnknownError } from '../../lib/server/core/enrolment/errors.ts';
import type { TokenRecord } from '../../lib/server/core/enrolment/ports.ts';
import { StoreUnavailableError } from '../../lib/server/core/unavailable.ts';

/**
 * A real client whose transactions are cancelled with the given reasons before anything is
 * sent (unit tests open no connections); a GetItem finds nothing.
 */
function cancellingStore(...codes: string[]) {
  return cancelling(Number.POSITIVE_INFINITY, codes).store;
}

/** The first `times` transactions cancelled with `codes`, the later ones written; `asked` counts them. */
function cancelling(times: number, codes: readonly string[]) {
  const client = makeDynamoDBClient({ region: 'us-east-1' });
  const counted = { asked: 0 };
  client.middlewareStack.add(
    (_next, context) => async () => {
      if (context.commandName === 'GetItemCommand') return { output: { $metadata: {} }, response: {} };
      counted.asked += 1;
      if (counted.asked > times) return { output: { $metadata: {} }, response: {} };
      throw new TransactionCanceledException({
        message: `Transaction cancelled [${codes.join(', ')}]`,
        $metadata: { httpStatusCode: 400 },
        CancellationReasons: codes.map((Code) => ({ Code })),
      });
    },
    { step: 'initialize', name: 'cancelTransactions' },
  );
  const where = { client: documentClient(client), tableName: 'inventory' };
  const store = new DynamoDBTokenStore({
    ...where,
    identityTable: 'identity',
    audit: new DynamoDBAuditTrail({ ...where, retentionDays: 365 }),
  });
  return { store, counted };
}

const token: TokenRecord = {
  node: 'alpha',
  tokenId: 'AAAAAAAAAAAA',
  secretHash: 'h',
  issuedAt: '2026-10-01T12:00:00.000Z',
  validUntilMs: Date.parse('2026-10-02T12:00:00Z'),
  replaced: [],
};
const spend = {
  node: 'alpha',
  tokenId: 'AAAAAAAAAAAA',
  presenter: 'p',
  thumbprint: 't',
  sealingKey: { kty: 'OKP', crv: 'X25519', x: 'x' },
  enrolledAt: 'now',
  by: localActor(),
};

describe('the token store when a transaction is cancelled', () => {
  // a lost race is asked again up to conflictRetries.attempts times first, with pauses of up to 1 s
  it('makes a lost race or a throttle "the store could not be asked", for issue and spend', {
    timeout: 30_000,
  }, async () => {
    await expect(
      cancellingStore('None', 'TransactionConflict').issue(token, undefined, localActor()),
    ).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(cancellingStore('TransactionConflict', 'None').spend(spend)).rejects.toBeInstanceOf(
      StoreUnavailableError,
    );
    await expect(cancellingStore('ThrottlingError', 'None').spend(spend)).rejects.toBeInstanceOf(
      StoreUnavailableError,
    );
  });

  it('asks a transaction cancelled by a conflict alone again, and it holds', async () => {
    const { store, counted } = cancelling(2, ['None', 'TransactionConflict']);
    await store.issue(token, undefined, localActor());
    expect(counted.asked).toBe(3);
  });

  it('still answers a failed condition as what it means, even beside a conflict', async () => {
    await expect(
      cancellingStore('ConditionalCheckFailed', 'TransactionConflict').issue(token, undefined, localActor()),
    ).rejects.toBeInstanceOf(NodeUnknownError);
  });

  it('answers the operator 503 try_again with Retry-After, not 500', async () => {
    const handler = tokenIssueHandler({ tokens: cancellingStore('None', 'TransactionConflict') });

    const answer = await handler(
      {
        httpMethod: 'POST',
        path: '/nodes/alpha/token',
        pathParameters: { node: 'alpha' },
        headers: {},
        body: '{}',
      } as unknown as APIGatewayProxyEvent,
      {} as Context,
    );

    expect(answer.statusCode).toBe(503);
    expect(answer.headers?.['retry-after']).toBe('2');
    expect(JSON.parse(answer.body)).toMatchObject({ error: { code: 'try_again' } });
  });
});
