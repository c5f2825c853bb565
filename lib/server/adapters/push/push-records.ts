import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { type Actor, meshSubject, nodeEntry } from '../../core/audit/record.ts';
import { PushRecordConflictError } from '../../core/mesh/errors.ts';
import {
  type PushRecord,
  type PushRecordReader,
  type PushRecordWriter,
  pushRecordDays,
} from '../../core/push/records.ts';
import { askStore } from '../../core/unavailable.ts';
import { AuditedTableStore } from '../audit/audit-trail.ts';
import { allOld, conditionFailed, type Item, itemAbsent, newestItems } from '../dynamodb/requests.ts';

/**
 * The record of every push (lib/server/core/push/records.ts), in the inventory table:
 *
 * | pk       | sk          | attributes |
 * |----------|-------------|------------|
 * | `pushes` | `<push id>` | the record: state, requestedBy, startedAt, finishedAt, request, outcome, pushed, flushed, flushedCount, rounds, behind, behindCount, error; expiresAt (epoch seconds, the table's TTL attribute) |
 *
 * Access: a conditional Put when a push starts, in one transaction with its audit record
 * (audit-trail.ts), and a conditional PutItem when it is done, a conditional
 * UpdateItem of `progress` as each round starts and, in a round of several batches, as each batch
 * finishes (ADD, so batches finishing together all count); reads are one
 * strongly consistent Query of the one partition, newest first (ids sort by time), or a strongly
 * consistent GetItem by id, so a push can be followed while it runs. No index: an index on AWS
 * lags, and a push that just started would not be there. A named push writes its record three
 * times, a 10,000-node audit about 400 times over its seconds: far below the partition's thousand
 * writes a second.
 */
export const pushesPartition = 'pushes';
const pushKey = (id: string) => ({ pk: pushesPartition, sk: id });

const pushUnrecorded = itemAbsent;
const pushStillRunning = `${itemAbsent} OR #state = :running`;
const pushRunning = '#state = :running';

const store = 'the inventory table';

export class DynamoDBPushRecords extends AuditedTableStore implements PushRecordWriter, PushRecordReader {
  /** The running record and the push's audit record, in one transaction: a push's start is a change. */
  async start(record: PushRecord, by: Actor): Promise<void> {
    const { node, behind, full } = record.request;
    const details = { push: record.id, behind, full };
    const entry = node
      ? nodeEntry(by, 'push.start', node, { details })
      : { by, action: 'push.start' as const, subject: meshSubject, target: meshSubject, details };
    const failed = await this.audit.transact(
      store,
      [
        {
          Put: {
            TableName: this.tableName,
            Item: { ...pushKey(record.id), ...record, expiresAt: expiresAtOf(record) },
            ConditionExpression: pushUnrecorded,
          },
        },
      ],
      entry,
    );
    if (failed) throw new PushRecordConflictError(record.id, 'start');
  }

  async finish(record: PushRecord): Promise<void> {
    await this.#put(record, 'finish', {
      ConditionExpression: pushStillRunning,
      ExpressionAttributeNames: { '#state': 'state' },
      ExpressionAttributeValues: { ':running': 'running' },
    });
  }

  async progress(id: string, progress: NonNullable<PushRecord['progress']>): Promise<void> {
    await this.#updateWhileRunning(id, {
      UpdateExpression: 'SET progress = :progress',
      ConditionExpression: pushRunning,
      ExpressionAttributeValues: { ':progress': progress },
    });
  }

  async batchDone(id: string, done: { readonly checked: number; readonly sent: number }): Promise<void> {
    await this.#updateWhileRunning(id, {
      UpdateExpression: 'ADD progress.checked :checked, progress.sentInRound :sent',
      ConditionExpression: `${pushRunning} AND attribute_exists(progress)`,
      ExpressionAttributeValues: { ':checked': done.checked, ':sent': done.sent },
    });
  }

  async handedOn(id: string, at: Date): Promise<void> {
    await this.#updateWhileRunning(id, {
      UpdateExpression: 'SET handedOnAt = :at ADD handOvers :one',
      ConditionExpression: pushRunning,
      ExpressionAttributeValues: { ':at': at.toISOString(), ':one': 1 },
    });
  }

  /** Updates a running push's progress; a record already done (or never started) keeps what it says. */
  async #updateWhileRunning(
    id: string,
    update: {
      UpdateExpression: string;
      ConditionExpression: string;
      ExpressionAttributeValues: Record<string, unknown>;
    },
  ): Promise<void> {
    try {
      await askStore(store, () =>
        this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: pushKey(id),
            ...update,
            ExpressionAttributeNames: { '#state': 'state' },
            ExpressionAttributeValues: { ...update.ExpressionAttributeValues, ':running': 'running' },
          }),
        ),
      );
    } catch (error) {
      if (!conditionFailed(error)) throw error;
    }
  }

  async list(limit: number): Promise<PushRecord[]> {
    const items = await newestItems(this.client, store, {
      tableName: this.tableName,
      partition: pushesPartition,
      limit,
    });
    return items.map(recordFrom);
  }

  async read(id: string): Promise<PushRecord | undefined> {
    const { Item } = await askStore(store, () =>
      this.client.send(new GetCommand({ TableName: this.tableName, Key: pushKey(id), ConsistentRead: true })),
    );
    return Item ? recordFrom(Item) : undefined;
  }

  async #put(record: PushRecord, step: 'finish', condition: object) {
    const expiresAt = expiresAtOf(record);
    try {
      await askStore(store, () =>
        this.client.send(
          new PutCommand({
            TableName: this.tableName,
            Item: { ...pushKey(record.id), ...record, expiresAt },
            ...condition,
            ...allOld,
          }),
        ),
      );
    } catch (error) {
      if (conditionFailed(error)) throw new PushRecordConflictError(record.id, step, { cause: error });
      throw error;
    }
  }
}

const expiresAtOf = (record: PushRecord) =>
  Math.floor(Date.parse(record.startedAt) / 1000) + pushRecordDays * 24 * 3600;

function recordFrom(item: Item): PushRecord {
  const { pk: _pk, sk: _sk, expiresAt: _expiresAt, ...record } = item;
  return record as PushRecord;
}
