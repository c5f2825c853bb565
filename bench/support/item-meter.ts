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
  return measuredBy(counts);
}

/**
 * What a function costs in `counts` (kept up to date by a client's middleware): its answer, its
 * wall time, and how far each count moved while it ran.
 */
export function measuredBy<C extends Record<string, number>>(counts: C) {
  return {
    measure: async <T>(fn: () => Promise<T>): Promise<{ value: T; ms: number } & C> => {
      const before = { ...counts };
      const started = performance.now();
      const value = await fn();
      const ms = performance.now() - started;
      const moved = Object.fromEntries(
        Object.keys(counts).map((key) => [key, (counts[key] ?? 0) - (before[key] ?? 0)]),
      );
      return { value, ms, ...(moved as C) };
    },
  };
}
