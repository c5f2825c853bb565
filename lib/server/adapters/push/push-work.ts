import type { PushWork } from '../../core/push/work.ts';
import { type Item, queryAll, TableStore, writeItems } from '../dynamodb/requests.ts';

/**
 * A push's work (lib/server/core/push/work.ts), in the inventory table:
 *
 * | pk                 | sk                 | attributes |
 * |--------------------|--------------------|------------|
 * | `pushwork#<work>`  | `<key>#<chunk>`    | part (a slice of the value's JSON), parts (how many slices the value has), expiresAt (epoch seconds, the table's TTL attribute) |
 *
 * A value of any size is kept as slices of at most `sliceChars` characters of its JSON (at most
 * 300 KB in UTF-8, under DynamoDB's 400 KB item), so a fold of 50,000 settled names (about
 * 3.3 MB) is a dozen items. Every slice names how many the value has: a value written again
 * shorter leaves slices past its count, which are never read. Writes are unconditional batches
 * of 25 (a part is written whole by one step, and a Retry writes the same); reads are strongly
 * consistent Queries of the work's one partition, paged at DynamoDB's 1 MB. A push of 50,000
 * nodes writes about 50 pages, 2,000 batch results and a fold a round: far below the
 * partition's thousand writes a second over the minutes it runs.
 */
export const pushWorkPartition = (work: string) => `pushwork#${work}`;
/** Every push's work, as an IAM leading-key pattern. */
export const pushWorkPartitions = 'pushwork#*';

/** Characters of JSON an item keeps: at most 3 bytes each in UTF-8, 300 KB. */
export const sliceChars = 100_000;

/** How long a push's work is kept: the push has answered long before; its record keeps the answer. */
const keptSeconds = 2 * 24 * 3600;

const store = 'the inventory table';
const chunk = (n: number) => String(n).padStart(4, '0');

export class DynamoDBPushWork extends TableStore implements PushWork {
  async put(work: string, key: string, value: unknown): Promise<void> {
    const text = JSON.stringify(value);
    const slices: string[] = [];
    for (let at = 0; at < text.length || slices.length === 0; ) {
      let end = Math.min(at + sliceChars, text.length);
      // never split a surrogate pair: each slice is valid UTF-16, so valid UTF-8 in the item
      if (end < text.length && /[\uD800-\uDBFF]/.test(text.charAt(end - 1))) end -= 1;
      slices.push(text.slice(at, end));
      at = end;
    }
    const expiresAt = Math.floor(Date.now() / 1000) + keptSeconds;
    await writeItems(this.client, store, this.tableName, {
      puts: slices.map((part, index) => ({
        pk: pushWorkPartition(work),
        sk: `${key}#${chunk(index)}`,
        part,
        parts: slices.length,
        expiresAt,
      })),
    });
  }

  async read(work: string, key: string): Promise<unknown> {
    const [value] = valuesOf(await this.#query(work, `${key}#`));
    return value;
  }

  async readAll(work: string, prefix: string): Promise<unknown[]> {
    return valuesOf(await this.#query(work, prefix));
  }

  #query(work: string, prefix: string): Promise<Item[]> {
    return queryAll(this.client, store, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': pushWorkPartition(work), ':prefix': prefix },
      ConsistentRead: true,
    });
  }
}

/** The values of items in key order, each joined from its slices; slices past a value's count are left. */
function valuesOf(items: readonly Item[]): unknown[] {
  const slices = new Map<string, { parts: number; texts: string[] }>();
  for (const item of items) {
    const sk = String(item.sk);
    const cut = sk.lastIndexOf('#');
    const key = sk.slice(0, cut);
    const index = Number(sk.slice(cut + 1));
    const value = slices.get(key) ?? { parts: Number(item.parts), texts: [] };
    if (index === 0) value.parts = Number(item.parts);
    value.texts[index] = String(item.part);
    slices.set(key, value);
  }
  return [...slices.values()].map(({ parts, texts }) => JSON.parse(texts.slice(0, parts).join('')));
}
