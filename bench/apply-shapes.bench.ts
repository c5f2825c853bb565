import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { makeDynamoDBClient } from '../lib/server/adapters/aws-clients.ts';
import { documentClient } from '../lib/server/adapters/dynamodb/requests.ts';
import { benchEnvironment } from './support/environment.ts';
import { median } from './support/stats.ts';
import type { BenchTable } from './support/table.ts';

/**
 * `npm run bench -- apply-shapes`: what one item costs DynamoDB Local in a transaction, by the
 * transaction's size and how many run at once, every item conditioned as an apply's are (a put
 * only if absent, a count held to its limit). It says which request shape an apply's writes
 * should take: the apply's time is its items (docs/mesh-file.md, "Figures").
 */
const itemsPerShape = Number(process.env.MESH_BENCH_SHAPES_ITEMS ?? 2_400);
const sizes = (process.env.MESH_BENCH_SHAPES_SIZES ?? '10,25,50,100').split(',').map(Number);
const lanes = (process.env.MESH_BENCH_SHAPES_LANES ?? '1,2,4,8').split(',').map(Number);
const runs = Number(process.env.MESH_BENCH_SHAPES_RUNS ?? 3);

export async function run(): Promise<BenchTable[]> {
  const environment = await benchEnvironment();
  const rows: Array<Array<string | number>> = [];
  try {
    const config = await environment.provision(`shapes-${Math.random().toString(36).slice(2, 8)}`);
    const client = makeDynamoDBClient(config);
    const table = documentClient(client);
    const TableName = config.inventoryTable;
    let serial = 0;
    try {
      for (const size of sizes)
        for (const width of lanes) {
          const each: number[] = [];
          for (let at = 0; at < runs; at++) {
            // One transaction: puts on fresh items, and one count on an item of its own, as an apply's.
            const transaction = () => {
              const id = serial++;
              return new TransactWriteCommand({
                TransactItems: [
                  ...Array.from({ length: size - 1 }, (_, i) => ({
                    Put: {
                      TableName,
                      Item: { pk: `node#shape-${id}-${i}`, sk: 'node', node: `shape-${id}-${i}` },
                      ConditionExpression: 'attribute_not_exists(pk)',
                    },
                  })),
                  {
                    Update: {
                      TableName,
                      Key: { pk: `node#count-${id}`, sk: 'node' },
                      UpdateExpression: 'ADD consumers :n',
                      ConditionExpression: 'attribute_not_exists(consumers) OR consumers <= :max',
                      ExpressionAttributeValues: { ':n': 1, ':max': 9_999 },
                    },
                  },
                ],
              });
            };
            let left = Math.ceil(itemsPerShape / size);
            const started = performance.now();
            await Promise.all(
              Array.from({ length: width }, async () => {
                while (left > 0) {
                  left -= 1;
                  await table.send(transaction());
                }
              }),
            );
            each.push((performance.now() - started) / (Math.ceil(itemsPerShape / size) * size));
          }
          const perItem = median(each);
          process.stderr.write(
            `${size} items a transaction, ${width} at once: ${perItem.toFixed(2)} ms an item\n`,
          );
          rows.push([
            `${size} items a transaction, ${width} at once`,
            perItem.toFixed(2),
            (1000 / perItem).toFixed(0),
          ]);
        }
    } finally {
      client.destroy();
    }
  } finally {
    await environment.stop();
  }
  return [
    {
      title: `DynamoDB Local: one conditioned item's cost in a transaction, by shape (${itemsPerShape} items a shape, median of ${runs})`,
      columns: ['shape', 'ms an item', 'items a second'],
      rows,
    },
  ];
}
