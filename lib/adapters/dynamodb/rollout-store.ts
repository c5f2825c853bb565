import { gunzipSync, gzipSync } from 'node:zlib';
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { RolloutRaceError, RolloutTooLargeError } from '../../core/rollout/errors.ts';
import type { RolloutPage, RolloutStore } from '../../core/rollout/ports.ts';
import type { RolloutRecord } from '../../core/rollout/record.ts';
import { summaryOf } from '../../core/rollout/service.ts';
import { askStore } from '../../core/unavailable.ts';
import { type Item, itemAbsent, queryAll, TableStore, type TransactItem, transact } from './requests.ts';

/**
 * Rollouts (lib/core/rollout/record.ts) in the inventory table:
 *
 * | pk                 | sk             | attributes |
 * |--------------------|----------------|------------|
 * | `rollouts`         | `<rollout id>` | state, version (N), createdAt, updatedAt, body: the record as gzipped JSON (B) |
 * | `rollouts#running` | `<rollout id>` | present exactly while the rollout is running |
 *
 * Every write is one transaction: the record, put only if its version is still the one read
 * (`unchanged`, or `unrecorded` for a new one), and the running item put or deleted with it, so
 * a driver finds every running rollout with one Query of a small partition, never a scan. The
 * body is gzipped: a wave's outcomes compress well, and one item holds 400 KB. Reads are strong:
 * a step reads what the step before it wrote.
 */
export const rolloutsPartition = 'rollouts';
const runningPartition = 'rollouts#running';
const rolloutKey = (id: string) => ({ pk: rolloutsPartition, sk: id });
const runningKey = (id: string) => ({ pk: runningPartition, sk: id });

const unrecorded = itemAbsent;
const unchanged = '#version = :read';
/** Under DynamoDB's 400 KB an item, with room for the key and the plain attributes. */
const maxBodyBytes = 380_000;

const store = 'the inventory table';

export class DynamoDBRolloutStore extends TableStore implements RolloutStore {
  async create(record: RolloutRecord): Promise<boolean> {
    const failed = await this.#write(record, { ConditionExpression: unrecorded });
    return failed === undefined;
  }

  async write(record: RolloutRecord): Promise<RolloutRecord> {
    const next = { ...record, version: record.version + 1 };
    const failed = await this.#write(next, {
      ConditionExpression: unchanged,
      ExpressionAttributeNames: { '#version': 'version' },
      ExpressionAttributeValues: { ':read': record.version },
    });
    if (failed) throw new RolloutRaceError(record.id);
    return next;
  }

  /** The record and its running item in one transaction; the failed condition's item, if one failed. */
  async #write(record: RolloutRecord, condition: Record<string, unknown>) {
    const body = gzipSync(JSON.stringify(record));
    if (body.length > maxBodyBytes)
      throw new RolloutTooLargeError(
        `rollout ${record.id}: its record is ${body.length} bytes gzipped, over ${maxBodyBytes}`,
      );
    const items: TransactItem[] = [
      {
        Put: {
          TableName: this.tableName,
          Item: {
            ...rolloutKey(record.id),
            state: record.state,
            version: record.version,
            createdAt: record.createdAt,
            updatedAt: record.updatedAt,
            body,
          },
          ...condition,
        },
      },
      record.state === 'running'
        ? {
            Put: {
              TableName: this.tableName,
              Item: { ...runningKey(record.id), createdAt: record.createdAt },
            },
          }
        : { Delete: { TableName: this.tableName, Key: runningKey(record.id) } },
    ];
    const failed = await transact(this.client, store, items);
    return failed?.[0];
  }

  async read(id: string): Promise<RolloutRecord | undefined> {
    const { Item } = await askStore(store, () =>
      this.client.send(
        new GetCommand({ TableName: this.tableName, Key: rolloutKey(id), ConsistentRead: true }),
      ),
    );
    return Item ? recordFrom(Item) : undefined;
  }

  async list(page: { readonly limit: number; readonly cursor?: string | undefined }): Promise<RolloutPage> {
    const { Items, LastEvaluatedKey } = await askStore(store, () =>
      this.client.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': rolloutsPartition },
          ScanIndexForward: false,
          Limit: page.limit,
          ConsistentRead: true,
          ...(page.cursor ? { ExclusiveStartKey: rolloutKey(page.cursor) } : {}),
        }),
      ),
    );
    const rollouts = (Items ?? []).map((item) => summaryOf(recordFrom(item)));
    const last = LastEvaluatedKey?.sk;
    return { rollouts, ...(typeof last === 'string' ? { cursor: last } : {}) };
  }

  async running(): Promise<string[]> {
    const items = await queryAll(this.client, store, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': runningPartition },
      ConsistentRead: true,
    });
    return items.map((item) => String(item.sk));
  }
}

function recordFrom(item: Item): RolloutRecord {
  const body = item.body as Uint8Array;
  return JSON.parse(gunzipSync(body).toString('utf8')) as RolloutRecord;
}
