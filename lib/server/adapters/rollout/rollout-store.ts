import { gunzipSync, gzipSync } from 'node:zlib';
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { type Actor, type AuditEntry, meshSubject } from '../../core/audit/record.ts';
import { isDriven } from '../../core/rollout/claims.ts';
import { RolloutRaceError } from '../../core/rollout/errors.ts';
import type {
  ClaimStep,
  RolloutChange,
  RolloutPage,
  RolloutStore,
  StepBudget,
} from '../../core/rollout/ports.ts';
import { type RolloutRecord, sizeOf, tallyOf, type Wave } from '../../core/rollout/record.ts';
import { summaryOf } from '../../core/rollout/service.ts';
import { askStore } from '../../core/unavailable.ts';
import type { AuditTrail } from '../audit/audit-trail.ts';
import {
  type Item,
  itemAbsent,
  queryAll,
  TableStore,
  type TableStoreOptions,
  type TransactItem,
  transact,
} from '../dynamodb/requests.ts';
import { keptOf, partsOf, RolloutParts } from './rollout-chunks.ts';
import { RolloutClaims } from './rollout-claims.ts';
import { holdingItem } from './rollout-holding.ts';
import { RolloutStarts } from './rollout-starts.ts';

/**
 * Rollouts (lib/server/core/rollout/record.ts) in the inventory table:
 *
 * | pk                 | sk             | attributes |
 * |--------------------|----------------|------------|
 * | `rollouts`         | `<rollout id>` | state, version (N), createdAt, updatedAt, body: the header as gzipped JSON (B) |
 * | `rollouts#running` | `<rollout id>` | present exactly while the driver has work: claiming, running, or claims to let go |
 * | `rollouts#holding` | `<rollout id>` | present exactly while it holds its nodes back (rollout-holding.ts) |
 * | `rollout#<id>`     | `nodes#…`      | a part of a wave's nodes (rollout-chunks.ts) |
 * | `rollouts#starting` | `<rollout id>` | a start under way (rollout-starts.ts) |
 * | `rollout-claim#<node>` | `claim`    | the rollout holding the node (rollout-claims.ts) |
 *
 * The header is the record without its nodes: origin, options, state, each wave's tally (size,
 * counts by state, first failures) and the parts that hold its nodes; a few KB at 50,000 nodes.
 * A write puts the parts of the waves it changed first, then the header and the running item in
 * one transaction: the header only if its version is still the one read (`unchanged`, or
 * `unrecorded` for a new one), the running item put or deleted with it, so a driver finds every
 * running rollout with one Query of a small partition, never a scan. Reads are strong: a step
 * reads what the step before it wrote.
 */
export const rolloutsPartition = 'rollouts';
const runningPartition = 'rollouts#running';

const rolloutKey = (id: string) => ({ pk: rolloutsPartition, sk: id });
const runningKey = (id: string) => ({ pk: runningPartition, sk: id });

const unrecorded = itemAbsent;
const unchanged = '#version = :read';

const store = 'the inventory table';

export class DynamoDBRolloutStore extends TableStore implements RolloutStore {
  readonly #parts: RolloutParts;
  readonly #claims: RolloutClaims;
  readonly #starts: RolloutStarts;

  readonly #audit: AuditTrail;

  constructor(options: TableStoreOptions & { readonly audit: AuditTrail }) {
    super(options);
    this.#audit = options.audit;
    this.#parts = new RolloutParts(this.client, this.tableName);
    this.#claims = new RolloutClaims(this.client, this.tableName, this.now);
    this.#starts = new RolloutStarts(this.client, this.tableName, this.now);
  }

  /**
   * The start's mark, then its parts, then its header with the mark deleted in one transaction:
   * a start that dies between its parts and its header leaves its mark, and `sweep` finds it.
   */
  async create(record: RolloutRecord, by: Actor): Promise<boolean> {
    if (await this.#header(record.id)) return false;
    await this.#starts.mark(record.id);
    const { failed } = await this.#write(
      record,
      { ConditionExpression: unrecorded },
      startEntry(record, by),
      [this.#starts.unmark(record.id)],
    );
    return failed === undefined;
  }

  /**
   * The parts of starts that died between their parts and their header (rollout-starts.ts): a
   * few, each deleted with its partition when no header came.
   */
  sweep(): Promise<number> {
    return this.#starts.sweep(
      async (id) => (await this.#header(id)) !== undefined,
      (id) => this.#parts.removeAll(id),
    );
  }

  async write(record: RolloutRecord, change?: RolloutChange): Promise<RolloutRecord> {
    const next = { ...record, version: record.version + 1 };
    const { failed, waves } = await this.#write(
      next,
      {
        ConditionExpression: unchanged,
        ExpressionAttributeNames: { '#version': 'version' },
        ExpressionAttributeValues: { ':read': record.version },
      },
      change ? changeEntry(next, change) : undefined,
    );
    if (failed) throw new RolloutRaceError(record.id);
    return { ...next, waves };
  }

  async claim(record: RolloutRecord, from: number, budget: StepBudget): Promise<ClaimStep> {
    const deadline = Date.now() + budget.ms;
    const upto = Math.min(sizeOf(record), from + budget.nodes);
    const nodes = await this.#parts.span(record, from, upto);
    // an undo takes over the claims of the rollout it takes back: those are claimable to it alone
    const stateOf = async (holder: string) => {
      const held = await this.read(holder);
      return held?.undoneBy === record.id ? 'undone' : held?.state;
    };
    const step = await this.#claims.claimSome(record.id, nodes, stateOf, deadline);
    if ('overlap' in step) return step;
    // a paired node is counted in the span but never claimed: the span's end is reached when its own nodes are
    return { claimed: step.claimed === nodes.length ? upto : from + step.claimed };
  }

  async release(record: RolloutRecord, from: number, upto: number, budget: StepBudget): Promise<number> {
    const deadline = Date.now() + budget.ms;
    const end = Math.min(upto, from + budget.nodes);
    const nodes = await this.#parts.span(record, from, end);
    const released = await this.#claims.releaseSome(
      record.id,
      nodes.map((n) => n.node),
      deadline,
    );
    return released === nodes.length ? end : from + released;
  }

  /**
   * The changed parts, then the header and its running item in one transaction (built as a list,
   * so a start's write may carry more); the failed condition's item, if one failed. Parts the
   * header no longer names are deleted once it holds, the new ones if it did not.
   */
  async #write(
    record: RolloutRecord,
    condition: Record<string, unknown>,
    entry?: AuditEntry,
    more: readonly TransactItem[] = [],
  ) {
    const { waves, puts, replaced } = partsOf(record);
    await this.#parts.put(puts);
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
            body: gzipSync(JSON.stringify({ ...record, waves: waves.map(headerWave) })),
          },
          ...condition,
        },
      },
      isDriven(record)
        ? {
            Put: {
              TableName: this.tableName,
              Item: { ...runningKey(record.id), createdAt: record.createdAt },
            },
          }
        : { Delete: { TableName: this.tableName, Key: runningKey(record.id) } },
      holdingItem(this.tableName, record, waves),
      ...more,
    ];
    const failed = entry
      ? await this.#audit.transact(store, items, entry)
      : await transact(this.client, store, items);
    const unnamed = failed ? puts.map((p) => String(p.sk)) : replaced;
    // what no header names is never read: a delete that fails leaves an item, never a wrong read
    await this.#parts.remove(record.id, unnamed).catch(() => undefined);
    return { failed: failed?.[0], waves };
  }

  async read(id: string): Promise<RolloutRecord | undefined> {
    const item = await this.#header(id);
    return item ? recordFrom(item) : undefined;
  }

  async #header(id: string): Promise<Item | undefined> {
    const { Item } = await askStore(store, () =>
      this.client.send(
        new GetCommand({ TableName: this.tableName, Key: rolloutKey(id), ConsistentRead: true }),
      ),
    );
    return Item;
  }

  withNodes(record: RolloutRecord, waves: readonly number[]): Promise<RolloutRecord> {
    return this.#parts.withNodes(record, waves);
  }

  nodesFrom(record: RolloutRecord, at: number, bytes: number) {
    return this.#parts.from(record, at, bytes);
  }

  /** From the claims: the wave each node was cut into, as the record's waves are indexed now (-1: an emptied wave, earlier). */
  async held(record: RolloutRecord, nodes: readonly string[]): Promise<ReadonlyMap<string, number>> {
    const claims = await this.#claims.of(nodes);
    const now = new Map(record.waves.map((w, index) => [keptOf(w).cut, index]));
    const held = new Map<string, number>();
    for (const [node, claim] of claims)
      if (claim.rollout === record.id) held.set(node, now.get(claim.wave) ?? -1);
    return held;
  }

  async moveClaims(record: RolloutRecord, wave: number, nodes: readonly string[]): Promise<void> {
    const into = record.waves[wave];
    if (nodes.length === 0 || !into) return;
    await this.#claims.move(record.id, nodes, keptOf(into).cut);
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

/** A wave as the header keeps it: its tally and its parts, not its nodes. */
function headerWave(wave: Wave): Wave {
  const { nodes: _nodes, ...rest } = wave;
  return { ...rest, tally: tallyOf(wave) };
}

function recordFrom(item: Item): RolloutRecord {
  const body = item.body as Uint8Array;
  return JSON.parse(gunzipSync(body).toString('utf8')) as RolloutRecord;
}

/** An operator's resume or abort, on the mesh's chain beside the start's. */
const changeEntry = (record: RolloutRecord, change: RolloutChange): AuditEntry => ({
  by: change.by,
  action: change.action,
  subject: meshSubject,
  target: `rollout:${record.id}`,
  details: { state: record.state, wave: record.current + 1, waves: record.waves.length },
});

/** A start's record, on the mesh's chain: a rollout names many nodes, and its own id is the target. */
const startEntry = (record: RolloutRecord, by: Actor): AuditEntry => ({
  by,
  // an agent upgrade is its own action: what a release reaches is asked of the trail by it
  action: record.origin.kind === 'agent' ? 'agent.upgrade' : 'rollout.start',
  subject: meshSubject,
  target: `rollout:${record.id}`,
  details: {
    origin: record.origin.kind,
    ...(record.origin.kind === 'agent' ? { version: record.origin.version } : {}),
    waves: record.waves.length,
    nodes: sizeOf(record),
  },
});
