import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { localPartsFor } from '../../lib/local/parts.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import { documentClient } from '../../lib/server/adapters/dynamodb/requests.ts';
import { pushWorkPartition } from '../../lib/server/adapters/push/push-work.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
import { provisionTestResources } from '../support/resources.ts';

let config: MeshConfig;
let parts: Parts;

beforeAll(async () => {
  config = await provisionTestResources('pushwork');
  parts = localPartsFor(config);
});

const longName = (i: number) => `node-${String(i).padStart(6, '0')}-`.padEnd(63, 'x');

/** How many items DynamoDB Local holds for one key of a push's work. */
async function itemsOf(work: string, key: string): Promise<number> {
  const answer = await documentClient(makeDynamoDBClient(config)).send(
    new QueryCommand({
      TableName: config.inventoryTable,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :key)',
      ExpressionAttributeValues: { ':pk': pushWorkPartition(work), ':key': `${key}#` },
    }),
  );
  return answer.Count ?? 0;
}

describe('a push’s work in DynamoDB Local', () => {
  it('keeps a list over one item’s 400 KB in slices, reads it whole, and a shorter one written over it', async () => {
    const names = Array.from({ length: 10_000 }, (_, i) => longName(i));
    await parts.pushWork.put('work-a', 'page/r0001/000000', names);

    expect(await itemsOf('work-a', 'page/r0001/000000')).toBe(7);
    expect(await parts.pushWork.read('work-a', 'page/r0001/000000')).toEqual(names);
    await parts.pushWork.put('work-a', 'page/r0001/000000', names.slice(0, 2));
    expect(await parts.pushWork.read('work-a', 'page/r0001/000000')).toEqual(names.slice(0, 2));
    expect(await parts.pushWork.read('work-a', 'page/r0001/000001')).toBeUndefined();
  });

  it('reads every key under a prefix in key order, and nothing of another push', async () => {
    await parts.pushWork.put('work-b', 'result/r0001/b', { n: 2 });
    await parts.pushWork.put('work-b', 'result/r0001/a', { n: 1 });
    await parts.pushWork.put('work-b', 'result/r0002/a', { n: 3 });
    await parts.pushWork.put('work-c', 'result/r0001/a', { n: 4 });

    expect(await parts.pushWork.readAll('work-b', 'result/')).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect(await parts.pushWork.readAll('work-b', 'result/r0002/')).toEqual([{ n: 3 }]);
  });
});
