import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

/** Items read and written, and requests, as a DynamoDB client sent them. */
export type ItemCounts = { requests: number; read: number; written: number };

/**
 * Counts what every request of `client` read and wrote, in items: a Query or Scan the items it
 * looked at, a GetItem one, a BatchGetItem the items it answered, a PutItem, UpdateItem or
 * DeleteItem one, a transaction or BatchWriteItem the items it holds (a transaction's condition
 * checks among them, as DynamoDB bills them).
 */
export function itemMeter(client: DynamoDBClient) {
  const counts: ItemCounts = { requests: 0, read: 0, written: 0 };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      const input = args.input as Record<string, unknown>;
      const output = result.output as unknown as Record<string, unknown>;
      counts.requests += 1;
      switch (context.commandName) {
        case 'QueryCommand':
        case 'ScanCommand':
          counts.read += Number(output.ScannedCount ?? 0);
          break;
        case 'GetItemCommand':
          counts.read += 1;
          break;
        case 'BatchGetItemCommand':
          for (const items of Object.values((output.Responses ?? {}) as Record<string, unknown[]>))
            counts.read += items.length;
          break;
        case 'PutItemCommand':
        case 'UpdateItemCommand':
        case 'DeleteItemCommand':
          counts.written += 1;
          break;
        case 'TransactWriteItemsCommand':
          counts.written += (input.TransactItems as unknown[] | undefined)?.length ?? 0;
          break;
        case 'BatchWriteItemCommand':
          for (const items of Object.values((input.RequestItems ?? {}) as Record<string, unknown[]>))
            counts.written += items.length;
          break;
      }
      return result;
    },
    { step: 'initialize', name: 'meshBenchItemMeter' },
  );
  return {
    measure: async <T>(fn: () => Promise<T>) => {
      const before = { ...counts };
      const started = performance.now();
      const value = await fn();
      return {
        value,
        ms: performance.now() - started,
        requests: counts.requests - before.requests,
        read: counts.read - before.read,
        written: counts.written - before.written,
      };
    },
  };
}
