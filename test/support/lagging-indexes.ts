import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

/**
 * Makes every read of a secondary index answer stale, as a GSI on AWS may (DynamoDB Local's are
 * synchronous): each index Query or Scan is answered with what the same request was answered
 * the time before, and the first time with nothing. Base-table reads are left as they are.
 * Returns how many index reads were answered stale, so a test can show it was in the way.
 */
export function lagIndexes(client: DynamoDBClient): { readonly staleReads: () => number } {
  const previous = new Map<string, unknown>();
  let stale = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { IndexName?: string };
      const read = context.commandName === 'QueryCommand' || context.commandName === 'ScanCommand';
      if (!read || !input.IndexName) return next(args);
      const key = JSON.stringify(input);
      const fresh = await next(args);
      const before = previous.get(key) ?? {
        ...(fresh.output as object),
        Items: [],
        Count: 0,
        ScannedCount: 0,
      };
      previous.set(key, fresh.output);
      stale += 1;
      return { ...fresh, output: { ...(before as typeof fresh.output), LastEvaluatedKey: undefined } };
    },
    { step: 'initialize', name: 'meshLaggingIndexes' },
  );
  return { staleReads: () => stale };
}
