import {
  type DynamoDBClient,
  TransactionCanceledException,
  TransactionConflictException,
} from '@aws-sdk/client-dynamodb';

/** The key of an item a request touches, the same for the document client's and the plain one's values. */
type Keyed = {
  readonly TableName?: string;
  readonly Key?: Record<string, unknown>;
  readonly Item?: Record<string, unknown>;
};

const plain = (value: unknown) =>
  value && typeof value === 'object' && 'S' in value ? (value as { S: unknown }).S : value;

function keyOf(request: Keyed): string {
  const item = request.Key ?? request.Item ?? {};
  return `${request.TableName}|${String(plain(item.pk))}|${String(plain(item.sk))}`;
}

function keysOf(commandName: string, input: Record<string, unknown>): string[] {
  if (commandName === 'TransactWriteItemsCommand') {
    const items = (input.TransactItems ?? []) as Array<Record<string, Keyed>>;
    return items.map((item) =>
      keyOf((item.Put ?? item.Update ?? item.Delete ?? item.ConditionCheck) as Keyed),
    );
  }
  if (['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand'].includes(commandName))
    return [keyOf(input as Keyed)];
  return [];
}

/**
 * DynamoDB's conflicts between a transaction and any other write of one of its items while it
 * is under way, as AWS answers them and DynamoDB Local (which runs one request at a time) never
 * does: a transaction meeting one under way is cancelled with `TransactionConflict`, a single
 * write meeting one fails with `TransactionConflictException`. Each transaction is kept under way
 * for `holdMs` more, as AWS's take tens of milliseconds. Added to a client's middleware; the
 * requests themselves go to DynamoDB Local unchanged.
 */
export function withTransactionConflicts(client: DynamoDBClient, holdMs = 5): { readonly conflicts: number } {
  const seen = { conflicts: 0 };
  const underWay = new Set<string>();
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const keys = keysOf(context.commandName ?? '', args.input as Record<string, unknown>);
      if (keys.length === 0) return next(args);
      const transaction = context.commandName === 'TransactWriteItemsCommand';
      const met = keys.some((key) => underWay.has(key));
      if (met) {
        seen.conflicts += 1;
        if (transaction)
          throw new TransactionCanceledException({
            message: 'Transaction cancelled, please refer cancellation reasons for specific reasons',
            $metadata: {},
            CancellationReasons: keys.map((key) => ({
              Code: underWay.has(key) ? 'TransactionConflict' : 'None',
            })),
          });
        throw new TransactionConflictException({
          message: 'Transaction is ongoing for the item',
          $metadata: {},
        });
      }
      if (!transaction) return next(args);
      for (const key of keys) underWay.add(key);
      try {
        const result = await next(args);
        await new Promise((resolve) => setTimeout(resolve, holdMs));
        return result;
      } finally {
        for (const key of keys) underWay.delete(key);
      }
    },
    { step: 'build', name: 'transactionConflicts' },
  );
  return seen;
}
