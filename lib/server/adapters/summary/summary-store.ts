import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { type Actor, meshSubject } from '../../core/audit/record.ts';
import { type CounterName, countersOf, type Deltas } from '../../core/summary/counters.ts';
import { WatermarkMovedError } from '../../core/summary/errors.ts';
import type { Applied, SummaryCounters, SummaryReader, SummaryRebuild } from '../../core/summary/ports.ts';
import {
  batchBehind,
  type Change,
  changesAfter,
  chunksOf,
  shardCatchingUp,
} from '../../core/summary/stream.ts';
import { type Summary, summaryOf } from '../../core/summary/summary.ts';
import { askStore, StoreUnavailableError } from '../../core/unavailable.ts';
import { AuditedTableStore } from '../audit/audit-trail.ts';
import {
  type Item,
  queryAll,
  scanAll,
  type TransactItem,
  transact,
  transactionLimit,
} from '../dynamodb/requests.ts';

/**
 * The summary's items in the inventory table (docs/decisions/summary-from-the-stream.md):
 *
 * | pk                 | sk                             | attributes |
 * |--------------------|--------------------------------|------------|
 * | `summary#counters` | `<counter>`                    | count (N): the mesh-wide part of a counter (`nodes`, `applied#3`, … lib/server/core/summary/counters.ts): shards folded in, or a rebuild's count |
 * | `summary#counters` | `shard#<shard>#<counter>`      | count (N): what one stream shard's changes moved the counter by, not folded yet |
 * | `summary#shards`   | `<shard>`                      | sequence (S, padded): the last change of the shard whose deltas are in the counters; behind (BOOL) and countedAt (N): whether its last batch said it is catching up, and when it was counted (stream.ts, `batchBehind`); folded (N): the countedAt of the batch after which its counters are folded; expiresAt (TTL) |
 * | `summary#state`    | `state`                        | lost (N): changes let go since the last rebuild; rebuilding (BOOL) |
 *
 * Access: the aggregator reads a shard's watermark, then applies each run of changes after it in
 * one transaction: one `ADD count` per counter the run moves, on the shard's own counter items,
 * and the watermark moved on, conditioned on being the one it read, so a batch delivered again is
 * counted once. Lambda reads a stream's shards in parallel: no item of one shard's transaction is
 * another shard's, so they never conflict. A counter is its mesh-wide item plus its shard items;
 * a shard idle for an hour is folded into the mesh-wide items (each shard item's count added there
 * and the shard item deleted, conditioned on its count, in one transaction), which keeps the sum
 * and the number of items bounded. The summary is one Query of `summary#counters` and one
 * GetItem, whatever the mesh's size. None of these partitions is a node's, so the counters' own
 * changes on the stream count nothing.
 */
export const countersPartition = 'summary#counters';
export const shardsPartition = 'summary#shards';
export const stateKey = { pk: 'summary#state', sk: 'state' } as const;
export const summaryPartitions = 'summary#*';

/** A shard's counter item: the shard's id kept whole whatever it holds. */
export const shardCounterKey = (shard: string, counter: CounterName) =>
  `shard#${encodeURIComponent(shard)}#${counter}`;

/** The shard and counter a counter item holds: no shard for a mesh-wide item. */
export function counterKeyOf(sk: string): { readonly shard?: string; readonly counter: CounterName } {
  if (!sk.startsWith('shard#')) return { counter: sk };
  const at = sk.indexOf('#', 'shard#'.length);
  return { shard: decodeURIComponent(sk.slice('shard#'.length, at)), counter: sk.slice(at + 1) };
}

/**
 * A shard whose last batch is this old is folded into the mesh-wide counters: Lambda hands a
 * shard's batches one at a time, so one idle this long is seldom handed one while it is folded
 * (and if it is, one of the two transactions is cancelled and done again).
 */
export const foldAfterSeconds = 3_600;
/** A fold's transaction: one shard item and its mesh-wide item per counter. */
const foldCounters = Math.floor(transactionLimit / 2);

/** A run's counters and the watermark fit one transaction. */
const maxCounters = transactionLimit - 1;
/** A watermark outlives the stream's 24 h retention, after which nothing of its shard comes again. */
const watermarkDays = 2;
const store = 'the inventory table';
/** Failures that are the request's, not the store's: asked again, the same run fails the same way. */
const refusedForGood = new Set(['ValidationException', 'ItemCollectionSizeLimitExceededException']);

export type SummaryLog = { error(message: string, extra?: Record<string, unknown>): void };

export class DynamoDBSummaryStore
  extends AuditedTableStore
  implements SummaryCounters, SummaryReader, SummaryRebuild
{
  async apply(shard: string, changes: readonly Change[]): Promise<Applied> {
    const read = await this.#watermark(shard);
    let seen = read.sequence;
    const nowSeconds = Math.floor(Date.parse(this.now()) / 1000);
    const behind = batchBehind(changes, nowSeconds);
    const fresh = changesAfter(changes, seen);
    let writes = 0;
    let lost = 0;
    let reason: string | undefined;
    let said = read.behind;
    let wroteNow = false;
    for (const chunk of chunksOf(fresh, maxCounters, seen)) {
      if (chunk.deltas.size === 0) continue;
      try {
        const failed = await transact(this.client, 'counting the summary', [
          ...counterUpdates(this.tableName, shard, chunk.deltas),
          this.#watermarkMove(shard, seen, chunk.mark, behind),
        ]);
        said = behind;
        wroteNow = true;
        if (failed) throw new WatermarkMovedError(`shard ${shard}: watermark moved from ${seen ?? 'none'}`);
      } catch (error) {
        if (!isRefusedForGood(error)) throw error;
        // A run the store refuses for good would stop the shard forever: it is let go, counted
        // as lost so the summary says it is no longer exact, and the watermark moves past it.
        await this.#noteLost(shard, seen, chunk.mark, Math.max(chunk.changes, 1));
        lost += chunk.changes;
        reason = (error as Error).message;
      }
      seen = chunk.mark;
      writes += 1;
    }
    // A batch with nothing new (delivered again, or read again after a restart) still says
    // whether the shard is behind: each one while it is, to say it is still catching up, then
    // once when it has caught up.
    if (!wroteNow && seen !== undefined && (behind || said !== behind)) {
      await this.#noteBehind(shard, behind, nowSeconds);
      writes += 1;
    }
    if (wroteNow) writes += await this.#foldIdleShards(shard, nowSeconds);
    return {
      applied: fresh.length - lost,
      skipped: changes.length - fresh.length,
      writes,
      lost,
      ...(reason === undefined ? {} : { reason }),
    };
  }

  async summary(): Promise<Summary> {
    const [items, state, shards] = await Promise.all([
      queryAll(this.client, store, {
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': countersPartition },
      }),
      askStore(store, () => this.client.send(new GetCommand({ TableName: this.tableName, Key: stateKey }))),
      queryAll(this.client, store, {
        TableName: this.tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': shardsPartition },
      }),
    ]);
    const counters = new Map<CounterName, number>();
    for (const item of items) {
      const { counter } = counterKeyOf(String(item.sk));
      counters.set(counter, (counters.get(counter) ?? 0) + Number(item.count ?? 0));
    }
    const lost = Number(state.Item?.lost ?? 0);
    const nowSeconds = Math.floor(Date.parse(this.now()) / 1000);
    const catchingUp = shards.some((shard) => shardCatchingUp(shard, nowSeconds));
    return summaryOf(counters, lost === 0 && state.Item?.rebuilding !== true, catchingUp);
  }

  /** Each shard's counter items not folded yet, by shard: what each shard's changes moved. */
  async shardCounters(): Promise<Map<string, Map<CounterName, number>>> {
    const items = await queryAll(this.client, store, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :shard)',
      ExpressionAttributeValues: { ':pk': countersPartition, ':shard': 'shard#' },
      ConsistentRead: true,
    });
    const shards = new Map<string, Map<CounterName, number>>();
    for (const item of items) {
      const { shard, counter } = counterKeyOf(String(item.sk));
      if (shard === undefined) continue;
      const counters = shards.get(shard) ?? new Map<CounterName, number>();
      counters.set(counter, Number(item.count ?? 0));
      shards.set(shard, counters);
    }
    return shards;
  }

  /**
   * Every other shard whose last batch is older than `foldAfterSeconds`, folded into the
   * mesh-wide counters; answers the transactions written. Housekeeping: a fold that meets the
   * shard's own aggregator, or another fold, is left for a later batch, the sum unchanged either way.
   */
  async #foldIdleShards(current: string, nowSeconds: number): Promise<number> {
    const watermarks = await queryAll(this.client, store, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': shardsPartition },
    });
    // a shard folded since its last batch (`folded` is that batch's countedAt) has nothing to fold
    const idle = watermarks
      .filter((item) => item.sk !== current && typeof item.countedAt === 'number')
      .filter((item) => item.folded !== item.countedAt)
      .filter((item) => nowSeconds - Number(item.countedAt) > foldAfterSeconds);
    if (idle.length === 0) return 0;
    const shards = await this.shardCounters();
    let writes = 0;
    for (const watermark of idle) {
      const shard = String(watermark.sk);
      const counters = [...(shards.get(shard) ?? [])];
      let whole = true;
      for (let start = 0; start < counters.length; start += foldCounters) {
        const failed = await transact(
          this.client,
          'folding a shard into the summary',
          counters.slice(start, start + foldCounters).flatMap(([counter, count]) => [
            counterUpdate(this.tableName, counter, count),
            {
              Delete: {
                TableName: this.tableName,
                Key: { pk: countersPartition, sk: shardCounterKey(shard, counter) },
                ConditionExpression: '#count = :count',
                ExpressionAttributeNames: { '#count': 'count' },
                ExpressionAttributeValues: { ':count': count },
              },
            },
          ]),
        ).catch((error: unknown) => {
          if (error instanceof StoreUnavailableError) return [];
          throw error;
        });
        writes += 1;
        // the shard counted again since the read, or another fold took it: left for later
        if (failed) {
          whole = false;
          break;
        }
      }
      if (whole) await this.#noteFolded(shard, Number(watermark.countedAt));
    }
    return writes;
  }

  /** The shard's counters are all in the mesh-wide ones, as of its batch counted at `countedAt`. */
  async #noteFolded(shard: string, countedAt: number): Promise<void> {
    await askStore(store, () =>
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: shardsPartition, sk: shard },
          UpdateExpression: 'SET folded = :countedAt',
          ConditionExpression: 'countedAt = :countedAt',
          ExpressionAttributeValues: { ':countedAt': countedAt },
        }),
      ),
    ).catch((error: unknown) => {
      // counted again meanwhile: its next idle hour folds it again
      if ((error as Error).name !== 'ConditionalCheckFailedException') throw error;
    });
  }

  /**
   * Counts every node's items again with a paged Scan and writes the counters as counted,
   * clearing what was lost. Changes made while it reads may be counted twice or not at all, so
   * the summary says it is not exact until it is done; run it when the mesh is quiet.
   */
  async rebuild(by: Actor): Promise<Summary> {
    // The rebuild is an operator's change of the counters: it starts with its audit record.
    await this.audit.transact(
      'starting a summary rebuild',
      [
        {
          Update: {
            TableName: this.tableName,
            Key: stateKey,
            UpdateExpression: 'SET rebuilding = :rebuilding',
            ExpressionAttributeValues: { ':rebuilding': true },
          },
        },
      ],
      { by, action: 'summary.rebuild', subject: meshSubject, target: 'summary' },
    );
    const counted = countersOf(await this.#everyNodeItem());
    const kept = await queryAll(this.client, store, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': countersPartition },
      ConsistentRead: true,
    });
    for (const item of kept)
      if (!counted.has(String(item.sk)))
        await askStore(store, () =>
          this.client.send(
            new DeleteCommand({ TableName: this.tableName, Key: { pk: item.pk, sk: item.sk } }),
          ),
        );
    for (const [name, count] of counted)
      await askStore(store, () =>
        this.client.send(
          new PutCommand({ TableName: this.tableName, Item: { pk: countersPartition, sk: name, count } }),
        ),
      );
    await this.#rebuilt();
    return summaryOf(counted, true);
  }

  #everyNodeItem(): Promise<Item[]> {
    return scanAll(this.client, store, {
      TableName: this.tableName,
      FilterExpression: 'begins_with(pk, :node)',
      ExpressionAttributeValues: { ':node': 'node#' },
      ConsistentRead: true,
    });
  }

  async #watermark(shard: string): Promise<{ readonly sequence?: string; readonly behind: boolean }> {
    const { Item } = await askStore(store, () =>
      this.client.send(
        new GetCommand({
          TableName: this.tableName,
          Key: { pk: shardsPartition, sk: shard },
          ConsistentRead: true,
        }),
      ),
    );
    return {
      ...(typeof Item?.sequence === 'string' ? { sequence: Item.sequence } : {}),
      behind: Item?.behind === true,
    };
  }

  async #noteBehind(shard: string, behind: boolean, nowSeconds: number): Promise<void> {
    await askStore(store, () =>
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: shardsPartition, sk: shard },
          UpdateExpression: 'SET behind = :behind, countedAt = :now',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':behind': behind, ':now': nowSeconds },
        }),
      ),
    ).catch((error: unknown) => {
      // a watermark gone with its TTL: the next batch that counts something writes it again
      if ((error as Error).name !== 'ConditionalCheckFailedException') throw error;
    });
  }

  #watermarkMove(shard: string, seen: string | undefined, last: string, behind = false): TransactItem {
    return {
      Update: {
        TableName: this.tableName,
        Key: { pk: shardsPartition, sk: shard },
        UpdateExpression: 'SET #sequence = :last, expiresAt = :expires, behind = :behind, countedAt = :now',
        ConditionExpression: seen === undefined ? 'attribute_not_exists(pk)' : '#sequence = :seen',
        ExpressionAttributeNames: { '#sequence': 'sequence' },
        ExpressionAttributeValues: {
          ':last': last,
          ':behind': behind,
          ':now': Math.floor(Date.parse(this.now()) / 1000),
          ':expires': Math.floor(Date.parse(this.now()) / 1000) + watermarkDays * 86_400,
          ...(seen === undefined ? {} : { ':seen': seen }),
        },
      },
    };
  }

  async #noteLost(shard: string, seen: string | undefined, last: string, count: number): Promise<void> {
    const failed = await transact(this.client, 'noting lost summary changes', [
      {
        Update: {
          TableName: this.tableName,
          Key: stateKey,
          UpdateExpression: 'ADD lost :count',
          ExpressionAttributeValues: { ':count': count },
        },
      },
      this.#watermarkMove(shard, seen, last),
    ]);
    if (failed) throw new WatermarkMovedError(`shard ${shard}: watermark moved from ${seen ?? 'none'}`);
  }

  /** The rebuild done: the counters are exact again, nothing lost since. */
  async #rebuilt(): Promise<void> {
    await askStore(store, () =>
      this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: stateKey,
          UpdateExpression: 'SET rebuilding = :rebuilding, lost = :lost',
          ExpressionAttributeValues: { ':rebuilding': false, ':lost': 0 },
        }),
      ),
    );
  }
}

/** A run's deltas on the shard's own counter items. */
function counterUpdates(tableName: string, shard: string, deltas: Deltas): TransactItem[] {
  return [...deltas].map(([name, delta]: [CounterName, number]) =>
    counterUpdate(tableName, name, delta, shard),
  );
}

/** `ADD count` on a counter's item: the shard's when one is named, else the mesh-wide one. */
function counterUpdate(tableName: string, name: CounterName, delta: number, shard?: string): TransactItem {
  return {
    Update: {
      TableName: tableName,
      Key: { pk: countersPartition, sk: shard === undefined ? name : shardCounterKey(shard, name) },
      UpdateExpression: 'ADD #count :delta',
      ExpressionAttributeNames: { '#count': 'count' },
      ExpressionAttributeValues: { ':delta': delta },
    },
  };
}

function isRefusedForGood(error: unknown): boolean {
  if (error instanceof StoreUnavailableError || error instanceof WatermarkMovedError) return false;
  return error instanceof Error && refusedForGood.has(error.name);
}
