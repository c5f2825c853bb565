import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { type Actor, meshSubject } from '../../core/audit/record.ts';
import type { Freeze } from '../../core/hold/freeze.ts';
import type { FreezeStore } from '../../core/hold/ports.ts';
import { AuditedTableStore } from '../audit/audit-trail.ts';
import { type Item, itemPresent, queryAll } from '../dynamodb/requests.ts';

/**
 * Freezes (lib/server/core/hold/freeze.ts) in the inventory table:
 *
 * | pk        | sk     | attributes |
 * |-----------|--------|------------|
 * | `freezes` | `<on>` | on (`all` or the selector), reason, until?, by, at; expiresAt (TTL, a day after until) |
 *
 * One small partition every send reads once a batch (hold-reader.ts): at most maxFreezes items.
 * Each put and delete is written with its audit record (`mesh.freeze`, `mesh.unfreeze`).
 */
export const freezesPartition = 'freezes';
const freezeKey = (on: string) => ({ pk: freezesPartition, sk: on });

const store = 'the inventory table';
/** Kept a day past its time, so a list just after it lifted still says when it did. */
const keptAfterSeconds = 24 * 3600;

export class DynamoDBFreezeStore extends AuditedTableStore implements FreezeStore {
  async put(freeze: Freeze, by: Actor): Promise<void> {
    await this.audit.transact(
      store,
      [
        {
          Put: {
            TableName: this.tableName,
            Item: {
              ...freezeKey(freeze.on),
              ...freeze,
              ...(freeze.until
                ? { expiresAt: Math.floor(Date.parse(freeze.until) / 1000) + keptAfterSeconds }
                : {}),
            },
          },
        },
      ],
      {
        by,
        action: 'mesh.freeze',
        subject: meshSubject,
        target: `freeze:${freeze.on}`,
        details: { reason: freeze.reason, ...(freeze.until ? { until: freeze.until } : {}) },
      },
    );
  }

  async remove(on: string, by: Actor): Promise<boolean> {
    const failed = await this.audit.transact(
      store,
      [{ Delete: { TableName: this.tableName, Key: freezeKey(on), ConditionExpression: itemPresent } }],
      { by, action: 'mesh.unfreeze', subject: meshSubject, target: `freeze:${on}` },
    );
    return failed === undefined;
  }

  async list(): Promise<Freeze[]> {
    return readFreezes(this.client, this.tableName);
  }
}

/** Every freeze kept, strongly read: a freeze written a moment ago holds the next send. */
export async function readFreezes(client: DynamoDBDocumentClient, tableName: string): Promise<Freeze[]> {
  const items = await queryAll(client, store, {
    TableName: tableName,
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': freezesPartition },
    ConsistentRead: true,
  });
  return items.map(freezeFrom);
}

const freezeFrom = (item: Item): Freeze => ({
  on: String(item.on),
  reason: String(item.reason),
  ...(typeof item.until === 'string' ? { until: item.until } : {}),
  by: String(item.by),
  at: String(item.at),
});
