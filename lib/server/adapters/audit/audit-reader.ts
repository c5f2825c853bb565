import { GetCommand, QueryCommand, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import {
  type AuditPage,
  type AuditQuery,
  type AuditReader,
  type AuditVerdict,
  findingsShown,
  type VerifyRange,
} from '../../core/audit/ports.ts';
import { type AuditRecord, nodeSubject } from '../../core/audit/record.ts';
import { ChainCheck, type ChainFinding } from '../../core/audit/verify.ts';
import { askStore } from '../../core/unavailable.ts';
import { type Item, TableStore, type TableStoreOptions } from '../dynamodb/requests.ts';
import {
  cursorAt,
  cursorOf,
  dayBefore,
  dayMs,
  dayOf,
  daysAt,
  daysCursor,
  daysCursorOf,
  indexFindings,
  indexKeyOf,
  keyOf,
} from './audit-cursors.ts';
import { auditChainsPartition, auditDayPartition, auditPartition, headFrom, headKey } from './audit-trail.ts';

const store = 'the audit trail';
/** The most queries one page may make, so a narrow filter over a long trail still answers in time. */
const queriesPerPage = 16;
/** What a filtered query reads at once: the filter is applied here, after the read. */
const filteredReadLimit = 500;

/**
 * The audit trail read back (audit-trail.ts has the layout). `--node` is one Query of the node's
 * chain, newest first, and `--since` ends it: both cost what they answer. Without `--node` the
 * days are walked newest first on the inventory's gsi1 (`audit#day#<day>`, sorted by time), from
 * today back to `--since` or the retention. `--actor` and `--action` are applied to what those
 * read: they cost the records of the window they look through, not only the ones they find.
 */
export class DynamoDBAuditReader extends TableStore implements AuditReader {
  readonly #retentionDays: number;

  constructor(options: TableStoreOptions & { readonly retentionDays: number }) {
    super(options);
    this.#retentionDays = options.retentionDays;
  }

  async page(query: AuditQuery): Promise<AuditPage> {
    const cursor = cursorAt(query.cursor);
    const filtered = query.actor !== undefined || query.action !== undefined;
    const wanted = (record: AuditRecord) =>
      (query.actor === undefined || record.principal === query.actor) &&
      (query.action === undefined || record.action === query.action);
    const records: AuditRecord[] = [];
    const readLimit = () => (filtered ? filteredReadLimit : query.limit - records.length);

    if (query.node !== undefined) {
      let start = cursor.start;
      for (let asked = 0; asked < queriesPerPage; asked += 1) {
        const { Items = [], LastEvaluatedKey } = await this.#query({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :rec)',
          ExpressionAttributeValues: { ':pk': auditPartition(nodeSubject(query.node)), ':rec': 'rec#' },
          ScanIndexForward: false,
          ConsistentRead: true,
          Limit: readLimit(),
          ...(start ? { ExclusiveStartKey: start } : {}),
        });
        for (const item of Items) {
          const record = recordOf(item);
          // A chain is written in time order: past `since`, nothing older is wanted.
          if (query.since !== undefined && record.time < query.since) return { records };
          if (!wanted(record)) continue;
          records.push(record);
          if (records.length === query.limit) return { records, next: cursorOf({ start: keyOf(item) }) };
        }
        if (!LastEvaluatedKey) return { records };
        start = LastEvaluatedKey;
      }
      return { records, ...(start ? { next: cursorOf({ start }) } : {}) };
    }

    const floor = this.#oldestDay(query.since);
    let day = cursor.day ?? dayOf(new Date(this.now()));
    let start = cursor.start;
    for (let asked = 0; asked < queriesPerPage && day >= floor; asked += 1) {
      const { Items = [], LastEvaluatedKey } = await this.#query({
        TableName: this.tableName,
        IndexName: 'gsi1',
        KeyConditionExpression:
          query.since !== undefined ? 'gsi1pk = :day AND gsi1sk >= :since' : 'gsi1pk = :day',
        ExpressionAttributeValues: {
          ':day': auditDayPartition(day),
          ...(query.since !== undefined ? { ':since': query.since } : {}),
        },
        ScanIndexForward: false,
        Limit: readLimit(),
        ...(start ? { ExclusiveStartKey: start } : {}),
      });
      for (const item of Items) {
        const record = recordOf(item);
        if (!wanted(record)) continue;
        records.push(record);
        if (records.length === query.limit)
          return { records, next: cursorOf({ day, start: indexKeyOf(item) }) };
      }
      start = LastEvaluatedKey;
      if (!start) day = dayBefore(day);
    }
    return { records, ...(day >= floor ? { next: cursorOf({ day, ...(start ? { start } : {}) }) } : {}) };
  }

  /**
   * Every chain, one after the other, each a page at a time in the order of its places: memory
   * holds one page and one record per chain, however long the trail. Then the other way round:
   * every record the day index lists, each of whose chain must be in the list of chains, so a
   * chain taken off the list (the one item that says verify should walk it) is named. A record
   * kept without the index keys of its time and place (which `mesh audit` reads by) is named as
   * its chain is walked. A page answers `next` where the next one starts: a chain's subject in the
   * first walk, `days:<day>[:<key>]` in the second.
   */
  async verify(range: VerifyRange = {}): Promise<AuditVerdict> {
    const nowSeconds = Math.floor(Date.parse(this.now()) / 1000);
    const verdict = { chains: 0, records: 0, indexed: 0, findingCount: 0, findings: [] as ChainFinding[] };
    const note = (found: readonly ChainFinding[]) => {
      verdict.findingCount += found.length;
      verdict.findings.push(...found.slice(0, Math.max(0, findingsShown - verdict.findings.length)));
    };
    const outOfTime = () => range.until !== undefined && Date.now() > range.until;
    const after = range.after;
    if (after === undefined || !after.startsWith(daysCursor)) {
      let done: string | undefined;
      for await (const chain of this.#pages({
        TableName: this.tableName,
        KeyConditionExpression: after === undefined ? 'pk = :pk' : 'pk = :pk AND sk > :after',
        ExpressionAttributeValues: {
          ':pk': auditChainsPartition,
          ...(after === undefined ? {} : { ':after': after }),
        },
        ConsistentRead: true,
      })) {
        const subject = String(chain.subject);
        if (verdict.chains > 0 && outOfTime()) return { ...verdict, ...(done ? { next: done } : {}) };
        const { Item } = await askStore(store, () =>
          this.client.send(
            new GetCommand({ TableName: this.tableName, Key: headKey(subject), ConsistentRead: true }),
          ),
        );
        const check = new ChainCheck(subject, headFrom(Item), nowSeconds);
        for await (const item of this.#pages({
          TableName: this.tableName,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :rec)',
          ExpressionAttributeValues: { ':pk': auditPartition(subject), ':rec': 'rec#' },
          ConsistentRead: true,
        })) {
          const place = Number(String(item.sk).slice(4));
          const record = recordOf(item);
          note(check.add(place, record));
          note(indexFindings(item, record, place));
        }
        note(check.end());
        verdict.chains += 1;
        verdict.records += check.records;
        done = String(chain.sk);
      }
      // The chains walked, the index is walked next: on this page if there is time, else the next.
      if (outOfTime()) return { ...verdict, next: daysCursor };
    }
    return this.#crossCheckDays(verdict, note, after?.startsWith(daysCursor) ? after : daysCursor, outOfTime);
  }

  /**
   * The second walk: every day of the retention, newest first, on gsi1; each record listed must be
   * of a chain in the list of chains. The list is read once a page (one Query, a few bytes a
   * chain); a chain missing from it is named once, at the first of its records the walk meets.
   */
  async #crossCheckDays(
    verdict: {
      chains: number;
      records: number;
      indexed: number;
      findingCount: number;
      findings: ChainFinding[];
    },
    note: (found: readonly ChainFinding[]) => void,
    cursor: string,
    outOfTime: () => boolean,
  ): Promise<AuditVerdict> {
    const listed = new Set<string>();
    for await (const chain of this.#pages({
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': auditChainsPartition },
      ConsistentRead: true,
    }))
      listed.add(String(chain.sk));
    const named = new Set<string>();
    const floor = this.#oldestDay(undefined);
    const at = daysAt(cursor);
    let day = at.day ?? dayOf(new Date(this.now()));
    let start = at.start;
    while (day >= floor) {
      if (outOfTime() && (verdict.indexed > 0 || verdict.chains > 0))
        return { ...verdict, next: daysCursorOf(day, start) };
      const { Items = [], LastEvaluatedKey } = await this.#query({
        TableName: this.tableName,
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :day',
        ExpressionAttributeValues: { ':day': auditDayPartition(day) },
        ...(start ? { ExclusiveStartKey: start } : {}),
      });
      for (const item of Items) {
        // the refusals' counters share the index, outside every chain (audit-refusals.ts)
        if (!String(item.sk).startsWith('rec#')) continue;
        verdict.indexed += 1;
        const subject = String(item.subject);
        if (listed.has(subject) || named.has(subject)) continue;
        // A chain begun since the list was read is listed by now: asked again, strongly.
        if (await this.#listed(subject)) {
          listed.add(subject);
          continue;
        }
        named.add(subject);
        note([
          {
            subject,
            seq: Number(item.seq),
            problem: 'hidden',
            says: 'its chain is not in the list of chains (audit#chains), so verify would not walk it: the list was edited',
          },
        ]);
      }
      start = LastEvaluatedKey;
      if (!start) day = dayBefore(day);
    }
    return verdict;
  }

  async #listed(subject: string): Promise<boolean> {
    const { Item } = await askStore(store, () =>
      this.client.send(
        new GetCommand({
          TableName: this.tableName,
          Key: { pk: auditChainsPartition, sk: subject },
          ConsistentRead: true,
        }),
      ),
    );
    return Item !== undefined;
  }

  async *#pages(input: QueryCommandInput): AsyncGenerator<Item> {
    let start: Item | undefined;
    do {
      const page = await this.#query({ ...input, ...(start ? { ExclusiveStartKey: start } : {}) });
      yield* page.Items ?? [];
      start = page.LastEvaluatedKey;
    } while (start);
  }

  #query(input: QueryCommandInput) {
    return askStore(store, () => this.client.send(new QueryCommand(input)));
  }

  #oldestDay(since: string | undefined): string {
    const kept = dayOf(new Date(Date.parse(this.now()) - this.#retentionDays * dayMs));
    if (since === undefined) return kept;
    const asked = since.slice(0, 10);
    return asked > kept ? asked : kept;
  }
}

/** A record as kept; a refusals counter (audit-refusals.ts) with its count among its details. */
export function recordOf(item: Item): AuditRecord {
  const { pk: _pk, sk: _sk, gsi1pk: _gsi1pk, gsi1sk: _gsi1sk, count, ...record } = item;
  return (count === undefined ? record : { ...record, details: { count } }) as AuditRecord;
}
