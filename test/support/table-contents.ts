import { type DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';

/**
 * Every item of both tables, read with strong scans and sorted by key, so two readings compare
 * with toEqual: what a request that must write nothing is checked against. The counters of
 * refused requests (lib/server/adapters/audit/audit-refusals.ts) are left out: a refusal writes
 * nothing else. `reader` is a client
 * to read with (the fuzz reads after every request); by default one is made for the reading.
 */
export async function tableContents(
  config: MeshConfig,
  reader?: DynamoDBClient,
): Promise<Record<string, unknown[]>> {
  const client = reader ?? makeDynamoDBClient(config);
  try {
    const contents: Record<string, unknown[]> = {};
    for (const table of [config.inventoryTable, config.identityTable]) {
      const items = await scanAll(client, table);
      contents[table] = items
        .filter((item) => !String(item.pk).startsWith('audit#refused#'))
        .map((item) => ({ key: `${String(item.pk)} ${String(item.sk)}`, item }))
        .sort((a, b) => a.key.localeCompare(b.key))
        .map(({ item }) => item);
    }
    return contents;
  } finally {
    if (!reader) client.destroy();
  }
}

/** Every item of `table`, read strongly, page after page. */
export async function scanAll(
  client: DynamoDBClient,
  table: string,
): Promise<Array<Record<string, unknown>>> {
  const items: Array<Record<string, unknown>> = [];
  let start: Record<string, never> | undefined;
  do {
    const page = await client.send(
      new ScanCommand({ TableName: table, ConsistentRead: true, ExclusiveStartKey: start }),
    );
    items.push(...(page.Items ?? []).map((item) => unmarshall(item)));
    start = page.LastEvaluatedKey as typeof start;
  } while (start);
  return items;
}
