import { gunzipSync, gzipSync } from 'node:zlib';
import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import {
  type ApplyJob,
  ApplyJobRaceError,
  ApplyJobRunningError,
  type RunningApplyJob,
} from '../../core/mesh-file/apply-job.ts';
import type { ApplyPlan } from '../../core/mesh-file/plan.ts';
import type { ApplyJobStore, ApplyLedger, LedgerRemoval } from '../../core/mesh-file/ports.ts';
import { pushRecordDays } from '../../core/push/records.ts';
import { askStore } from '../../core/unavailable.ts';
import {
  allOld,
  conditionFailed,
  type Item,
  itemAbsent,
  queryAll,
  TableStore,
  type TransactItem,
  transact,
  writeItems,
} from '../dynamodb/requests.ts';

/**
 * Apply jobs (lib/server/core/mesh-file/apply-job.ts) in the inventory table:
 *
 * | pk                     | sk           | attributes |
 * |------------------------|--------------|------------|
 * | `mesh#apply-job`       | `running`    | job (its id), heardAt: present exactly while a job runs |
 * | `mesh#apply-job#<id>`  | `record`     | state, parts (N), job: the record (M); expiresAt (TTL, 90 days) |
 * | `mesh#apply-job#<id>`  | `file#<nnn>` | data (B): the file's text gzipped, cut in parts of at most 300 KB; expiresAt (TTL, a day) |
 * | `mesh#apply-job#<id>`  | `plan#<nnnnn>#<nnn>` | data (B): one slice of the job's plan (plan-slices.ts) as JSON gzipped, cut in parts of at most 300 KB; expiresAt (TTL, two days) |
 * | `mesh#apply-job#<id>`  | `tx#<uuid>`  | the ledger: nodes (L), items (N) of one transaction of the job, put in that transaction (mesh-file-writer.ts); expiresAt (TTL, two days) |
 * | `mesh#apply-job#<id>`  | `removed#<what>` | the ledger: kind, node, modules (N) of one removal, put before it is made (`<what>`: `node#<n>`, `module#<n>/<m>`, `relation#<n>/<m>/<pn>/<pm>`, so one removal noted twice is one item); expiresAt |
 *
 * A start puts its file's parts first (a new id, so nothing is there), then its record and the
 * running item in one transaction: the running item only if none is there, or if it is still the
 * stale job being taken over (`stillTheStaleJob`), whose record is ended `failed` in the same
 * transaction. A part's record is put only if the job still runs at the parts read
 * (`partsUnchanged`), with the running item's heardAt set, or the item deleted when the job ends,
 * in the same transaction. A 6 MB file is a few hundred KB gzipped; the parts' items keep each
 * write far under DynamoDB's 400 KB an item. A plan's slices are put 25 items a request (at most
 * 7.5 MB, within BatchWriteItem's 16 MB), unconditionally: the record names them only after
 * they are all there, and a part that plans again puts the same keys. Reads are strong: an advance reads what the part
 * before it wrote.
 */
export const applyJobsPartition = 'mesh#apply-job';
/** Every job's own partition, where its plan's slices are put in batches (the `applyJobs:plan` grant). */
export const applyJobPartitions = `${applyJobsPartition}#*`;
const runningKey = { pk: applyJobsPartition, sk: 'running' } as const;
const jobPartition = (id: string) => `${applyJobsPartition}#${id}`;
const recordKey = (id: string) => ({ pk: jobPartition(id), sk: 'record' });
const filePartKey = (id: string, part: number) => ({
  pk: jobPartition(id),
  sk: `file#${String(part).padStart(3, '0')}`,
});
const filePartBytes = 300 * 1024;
const slicePrefix = (index: number) => `plan#${String(index).padStart(5, '0')}#`;
/** The ledger's items: one a transaction, one a removal. */
export const ledgerTransactionKey = (id: string, tx: string) => ({ pk: jobPartition(id), sk: `tx#${tx}` });
const removalSk = (removal: LedgerRemoval) =>
  removal.kind === 'relation'
    ? `removed#relation#${removal.consumerNode}/${removal.consumerModule}/${removal.providerNode}/${removal.providerModule}`
    : removal.kind === 'module'
      ? `removed#module#${removal.node}/${removal.module}`
      : `removed#node#${removal.node}`;
/** The ledger outlives any job that can still read it: one not heard from for 15 minutes is taken over. */
const ledgerDays = 2;
export const ledgerExpiresAt = (nowIso: string) =>
  Math.floor(Date.parse(nowIso) / 1000) + ledgerDays * 24 * 3600;

const newJob = itemAbsent;
const noneRunning = itemAbsent;
const stillTheStaleJob = '#job = :stale AND heardAt = :heard';
const ownsRunning = '#job = :id';
const partsUnchanged = '#state = :running AND parts = :seen';
const stillRunning = '#state = :running';

const store = 'the inventory table';

export class DynamoDBApplyJobs extends TableStore implements ApplyJobStore {
  async running(): Promise<RunningApplyJob | undefined> {
    const { Item } = await askStore(store, () =>
      this.client.send(new GetCommand({ TableName: this.tableName, Key: runningKey, ConsistentRead: true })),
    );
    return Item ? { id: String(Item.job), heardAt: String(Item.heardAt) } : undefined;
  }

  async start(job: ApplyJob, file: string, takingOver?: RunningApplyJob): Promise<void> {
    const zipped = gzipSync(Buffer.from(file, 'utf8'));
    const parts: Buffer[] = [];
    for (let at = 0; at < zipped.length; at += filePartBytes)
      parts.push(zipped.subarray(at, at + filePartBytes));
    try {
      for (const [index, data] of parts.entries())
        await askStore(store, () =>
          this.client.send(
            new PutCommand({
              TableName: this.tableName,
              Item: { ...filePartKey(job.id, index), data, expiresAt: expiresAtOf(job, fileDays) },
              ConditionExpression: newJob,
              ...allOld,
            }),
          ),
        );
    } catch (error) {
      // an id drawn twice in one millisecond: never another job's file
      if (conditionFailed(error)) throw new ApplyJobRaceError(job.id, { cause: error });
      throw error;
    }
    const items: TransactItem[] = [
      {
        Put: {
          TableName: this.tableName,
          Item: { ...runningKey, job: job.id, heardAt: job.updatedAt },
          ...(takingOver
            ? {
                ConditionExpression: stillTheStaleJob,
                ExpressionAttributeNames: { '#job': 'job' },
                ExpressionAttributeValues: { ':stale': takingOver.id, ':heard': takingOver.heardAt },
              }
            : { ConditionExpression: noneRunning }),
        },
      },
      {
        Put: {
          TableName: this.tableName,
          Item: recordItem(job),
          ConditionExpression: newJob,
        },
      },
    ];
    if (takingOver)
      items.push({
        Update: {
          TableName: this.tableName,
          Key: recordKey(takingOver.id),
          UpdateExpression:
            'SET #state = :failed, #job.#state = :failed, #job.#error = :error, #job.updatedAt = :at',
          ConditionExpression: stillRunning,
          ExpressionAttributeNames: { '#state': 'state', '#job': 'job', '#error': 'error' },
          ExpressionAttributeValues: {
            ':failed': 'failed',
            ':running': 'running',
            ':at': job.startedAt,
            ':error': {
              status: 409,
              code: 'apply_job_abandoned',
              message: `no part of it was recorded for too long; apply job ${job.id} took its place`,
            },
          },
        },
      });
    const failed = await transact(this.client, store, items);
    if (!failed) return;
    await Promise.all(
      parts.map((_, index) =>
        this.client
          .send(new DeleteCommand({ TableName: this.tableName, Key: filePartKey(job.id, index) }))
          .catch(() => undefined),
      ),
    );
    throw new ApplyJobRunningError(String(failed[0]?.old?.job ?? takingOver?.id ?? 'another job'));
  }

  async read(id: string): Promise<ApplyJob | undefined> {
    const { Item } = await askStore(store, () =>
      this.client.send(
        new GetCommand({ TableName: this.tableName, Key: recordKey(id), ConsistentRead: true }),
      ),
    );
    return Item ? (Item.job as ApplyJob) : undefined;
  }

  async load(id: string): Promise<{ readonly job: ApplyJob; readonly file: string } | undefined> {
    const job = await this.read(id);
    if (!job) return undefined;
    const items = await queryAll(this.client, store, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :file)',
      ExpressionAttributeValues: { ':pk': jobPartition(id), ':file': 'file#' },
      ConsistentRead: true,
    });
    const parts = items
      .sort((a, b) => (String(a.sk) < String(b.sk) ? -1 : 1))
      .map((item) => Buffer.from(item.data as Uint8Array));
    return { job, file: gunzipSync(Buffer.concat(parts)).toString('utf8') };
  }

  async keepPlan(id: string, slices: readonly ApplyPlan[]): Promise<void> {
    // as long as the ledger: a job reads its plan while it runs, and one not heard from is taken over
    const expiresAt = ledgerExpiresAt(this.now());
    const puts: Item[] = [];
    for (const [index, slice] of slices.entries()) {
      const zipped = gzipSync(Buffer.from(JSON.stringify(slice), 'utf8'));
      for (let at = 0, part = 0; at < zipped.length; at += filePartBytes, part += 1)
        puts.push({
          pk: jobPartition(id),
          sk: `${slicePrefix(index)}${String(part).padStart(3, '0')}`,
          data: zipped.subarray(at, at + filePartBytes),
          expiresAt,
        });
    }
    await writeItems(this.client, store, this.tableName, { puts });
  }

  async slice(id: string, index: number): Promise<ApplyPlan> {
    const items = await queryAll(this.client, store, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :slice)',
      ExpressionAttributeValues: { ':pk': jobPartition(id), ':slice': slicePrefix(index) },
      ConsistentRead: true,
    });
    const parts = items
      .sort((a, b) => (String(a.sk) < String(b.sk) ? -1 : 1))
      .map((item) => Buffer.from(item.data as Uint8Array));
    return JSON.parse(gunzipSync(Buffer.concat(parts)).toString('utf8')) as ApplyPlan;
  }

  async ledger(id: string): Promise<ApplyLedger> {
    const items = async (prefix: string) =>
      queryAll(this.client, store, {
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': jobPartition(id), ':prefix': prefix },
        ConsistentRead: true,
      });
    const touched = new Set<string>();
    const written = { transactions: 0, items: 0 };
    for (const item of await items('tx#')) {
      written.transactions += 1;
      written.items += Number(item.items ?? 0);
      for (const node of (item.nodes as string[] | undefined) ?? []) touched.add(node);
    }
    const removed = { relations: 0, modules: 0, nodes: 0 };
    for (const item of await items('removed#')) {
      touched.add(String(item.node));
      if (item.kind === 'relation') removed.relations += 1;
      else if (item.kind === 'module') removed.modules += 1;
      else {
        removed.nodes += 1;
        removed.modules += Number(item.modules ?? 0);
      }
    }
    return { written, removed, touched: touched.size };
  }

  async noteRemoval(id: string, removal: LedgerRemoval): Promise<void> {
    await askStore(store, () =>
      this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            pk: jobPartition(id),
            sk: removalSk(removal),
            kind: removal.kind,
            node: removal.kind === 'relation' ? removal.consumerNode : removal.node,
            ...(removal.kind === 'node' ? { modules: removal.modules } : {}),
            expiresAt: ledgerExpiresAt(this.now()),
          },
        }),
      ),
    );
  }

  async forgetRemoval(id: string, removal: LedgerRemoval): Promise<void> {
    await askStore(store, () =>
      this.client.send(
        new DeleteCommand({
          TableName: this.tableName,
          Key: { pk: jobPartition(id), sk: removalSk(removal) },
        }),
      ),
    );
  }

  async record(next: ApplyJob, seenParts: number): Promise<void> {
    const owned = {
      ConditionExpression: ownsRunning,
      ExpressionAttributeNames: { '#job': 'job' },
      ExpressionAttributeValues: { ':id': next.id },
    };
    const failed = await transact(this.client, store, [
      {
        Put: {
          TableName: this.tableName,
          Item: recordItem(next),
          ConditionExpression: partsUnchanged,
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: { ':running': 'running', ':seen': seenParts },
        },
      },
      next.state === 'running'
        ? {
            Update: {
              TableName: this.tableName,
              Key: runningKey,
              UpdateExpression: 'SET heardAt = :at',
              ...owned,
              ExpressionAttributeValues: { ...owned.ExpressionAttributeValues, ':at': next.updatedAt },
            },
          }
        : { Delete: { TableName: this.tableName, Key: runningKey, ...owned } },
    ]);
    if (failed) throw new ApplyJobRaceError(next.id);
  }
}

/**
 * A job and its file go with the table's TTL, the record after as many days as a push's and the
 * file after one: a job not heard from for 15 minutes is taken over, so no job reads its file
 * after a day, and a 6 MB file is not kept for every apply that outlived its request.
 */
const applyJobDays = pushRecordDays;
const fileDays = 1;
const expiresAtOf = (job: ApplyJob, days: number) =>
  Math.floor(Date.parse(job.startedAt) / 1000) + days * 24 * 3600;

const recordItem = (job: ApplyJob): Item => ({
  ...recordKey(job.id),
  state: job.state,
  parts: job.parts,
  job,
  expiresAt: expiresAtOf(job, applyJobDays),
});
