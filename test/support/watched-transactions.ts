import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { localPartsFor } from '../../lib/local/parts.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';

/** What a test does around the Nth TransactWriteItems of a watched client (counted from 1). */
export type AroundTransaction = {
  /** Before the transaction is sent: a change that lands between a read and the write. */
  readonly before?: (count: number) => Promise<void>;
  /** Once it has been written: a change that lands between two transactions. */
  readonly after?: (count: number) => Promise<void>;
};

/**
 * Parts on a DynamoDB client of their own that counts its TransactWriteItems and lets the test
 * act around each, through the SDK's middleware stack: the calls themselves go to DynamoDB
 * Local unchanged.
 */
export function partsWatchingTransactions(
  config: MeshConfig,
  around: AroundTransaction = {},
): {
  readonly counted: { transactions: number; itemsQueried: number };
  readonly parts: Parts;
  readonly client: DynamoDBClient;
} {
  const counted = { transactions: 0, itemsQueried: 0 };
  const client = makeDynamoDBClient(config);
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'QueryCommand') {
        const answer = await next(args);
        counted.itemsQueried += (answer.output as { Count?: number }).Count ?? 0;
        return answer;
      }
      if (context.commandName !== 'TransactWriteItemsCommand') return next(args);
      counted.transactions += 1;
      const count = counted.transactions;
      await around.before?.(count);
      const result = await next(args);
      await around.after?.(count);
      return result;
    },
    { step: 'initialize' },
  );
  return { counted, parts: localPartsFor(config, { clients: { dynamodb: client } }), client };
}
