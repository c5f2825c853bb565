import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { type AuditEntry, type AuditRecord, type ChainHead, nextRecord } from '../../core/audit/record.ts';
import { askStore, StoreUnavailableError } from '../../core/unavailable.ts';
import {
  type Item,
  itemAbsent,
  TableStore,
  type TableStoreOptions,
  type TransactItem,
  transact,
} from '../dynamodb/requests.ts';

/**
 * The audit trail in the inventory table (docs/audit.md, docs/decisions/audit-chains.md): a
 * change's store hands its transaction's items to `transact` with the change's entry, and the
 * record and its chain's head go in the same transaction, so no change commits without its record.
 *
 * | pk                | sk           | attributes |
 * |-------------------|--------------|------------|
 * | `audit#<subject>` | `head`       | seq, hash, expiresAt of the chain's last record (no TTL: the head outlives its records) |
 * | `audit#<subject>` | `rec#<seq>`  | the record (lib/server/core/audit/record.ts), seq zero-padded to 12 digits; expiresAt (the table's TTL attribute); gsi1pk `audit#day#<YYYY-MM-DD>`, gsi1sk `<time>#<subject>#<seq>` |
 * | `audit#chains`    | `<subject>`  | subject, startedAt: put once, with a chain's first record, so verify can find every chain |
 *
 * A subject is `node:<name>` or `mesh`: changes of different nodes never touch the same head,
 * and the head is updated only on the condition that it is still the one read (named below).
 * Two changes of one subject at once: one wins, the other reads the head again and retries.
 */
export const auditPartition = (subject: string) => `audit#${subject}`;
export const auditPartitions = 'audit#*';
export const auditChainsPartition = 'audit#chains';
export const auditDayPartition = (day: string) => `audit#day#${day}`;
export const auditDayPartitions = 'audit#day#*';
export const headKey = (subject: string) => ({ pk: auditPartition(subject), sk: 'head' });
export const recordSk = (seq: number) => `rec#${String(seq).padStart(12, '0')}`;
/** The day index's keys of a record: by its day, sorted by its time, then its chain and place. */
export const auditIndexKeys = (record: Pick<AuditRecord, 'time' | 'subject' | 'seq'>) => ({
  gsi1pk: auditDayPartition(record.time.slice(0, 10)),
  gsi1sk: `${record.time}#${record.subject}#${recordSk(record.seq)}`,
});

const chainUnstarted = itemAbsent;
const headUnchanged = 'seq = :seq AND #hash = :hash';
const recordUnwritten = itemAbsent;

/** Most items a record adds to a change's transaction: the record, its head, the chain's entry. */
export const auditItemsMax = 3;

/** Builds the record's items; a test may pass one whose condition cannot hold. */
export type AuditItemsOf = (
  record: AuditRecord,
  head: ChainHead | undefined,
  tableName: string,
) => TransactItem[];

export const auditItems: AuditItemsOf = (record, head, tableName) => {
  const items: TransactItem[] = [
    {
      Put: {
        TableName: tableName,
        Item: {
          pk: auditPartition(record.subject),
          sk: recordSk(record.seq),
          ...record,
          ...auditIndexKeys(record),
        },
        ConditionExpression: recordUnwritten,
      },
    },
    {
      Put: {
        TableName: tableName,
        Item: {
          ...headKey(record.subject),
          seq: record.seq,
          hash: record.hash,
          expiresAtOfLast: record.expiresAt,
        },
        ConditionExpression: head ? headUnchanged : chainUnstarted,
        ...(head
          ? {
              ExpressionAttributeNames: { '#hash': 'hash' },
              ExpressionAttributeValues: { ':seq': head.seq, ':hash': head.hash },
            }
          : {}),
      },
    },
  ];
  if (!head)
    items.push({
      Put: {
        TableName: tableName,
        Item: {
          pk: auditChainsPartition,
          sk: record.subject,
          subject: record.subject,
          startedAt: record.time,
        },
      },
    });
  return items;
};

export function headFrom(item: Item | undefined): ChainHead | undefined {
  if (!item) return undefined;
  return {
    seq: Number(item.seq),
    hash: String(item.hash),
    ...(item.expiresAtOfLast !== undefined ? { expiresAt: Number(item.expiresAtOfLast) } : {}),
  };
}

/** How often a change tries again when another change of its subject took the head first. */
const headRaces = 5;

export type AuditTrailOptions = TableStoreOptions & {
  /** How long records are kept (config `auditRetentionDays`). */
  readonly retentionDays: number;
  /** @default auditItems */
  readonly itemsOf?: AuditItemsOf;
};

/**
 * What a store that makes changes is given: its transaction run with the change's record. The
 * bench passes one that writes no record, to measure what the record costs.
 */
export interface AuditTrail {
  transact(what: string, items: readonly TransactItem[], entry: AuditEntry): ReturnType<typeof transact>;
}

export type AuditedStoreOptions = TableStoreOptions & { readonly audit: AuditTrail };

/** The one shape of every single-table store that makes changes: each change runs with its record. */
export abstract class AuditedTableStore extends TableStore {
  protected readonly audit: AuditTrail;

  constructor(options: AuditedStoreOptions) {
    super(options);
    this.audit = options.audit;
  }
}

export class DynamoDBAuditTrail extends TableStore implements AuditTrail {
  readonly #retentionDays: number;
  readonly #itemsOf: AuditItemsOf;

  constructor(options: AuditTrailOptions) {
    super(options);
    this.#retentionDays = options.retentionDays;
    this.#itemsOf = options.itemsOf ?? auditItems;
  }

  /**
   * Runs the change's transaction with its record; like `transact`, undefined when it held, else
   * per item of the change whether its condition failed. When only the record's conditions
   * failed, the chain moved since its head was read: read again and try again, a few times,
   * then the store is "not now" (StoreUnavailableError) and the change does not happen.
   */
  async transact(
    what: string,
    items: readonly TransactItem[],
    entry: AuditEntry,
  ): ReturnType<typeof transact> {
    for (let race = 0; race < headRaces; race += 1) {
      const head = await this.head(entry.subject);
      const record = nextRecord(entry, head, { time: this.now(), retentionDays: this.#retentionDays });
      const failed = await transact(this.client, what, [
        ...items,
        ...this.#itemsOf(record, head, this.tableName),
      ]);
      if (!failed) return undefined;
      const own = failed.slice(0, items.length);
      if (own.some(Boolean)) return own;
    }
    throw new StoreUnavailableError(`writing the audit record of ${entry.action} on ${entry.subject}`);
  }

  async head(subject: string): Promise<ChainHead | undefined> {
    const { Item } = await askStore('the audit trail', () =>
      this.client.send(
        new GetCommand({ TableName: this.tableName, Key: headKey(subject), ConsistentRead: true }),
      ),
    );
    return headFrom(Item);
  }
}
