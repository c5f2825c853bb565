import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type Shard,
  type _Record as StreamRecord,
} from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBRecord } from 'aws-lambda';
import { countedPartitionPrefix } from '../server/core/summary/stream.ts';
import type { StreamHandler } from '../server/functions/spec.ts';
import type { MeshConfig } from '../server/setup/config.ts';
import { invocation } from './aws-quotas.ts';
import { asFunction } from './call-record.ts';

export type StreamSourceOptions = {
  readonly dynamodb: DynamoDBClient;
  readonly config: Pick<MeshConfig, 'region' | 'endpoints'>;
  readonly tableName: string;
  readonly handler: StreamHandler;
  readonly functionName: string;
  /** @default 100, as the summary's event source mapping */
  readonly batchSize?: number;
  /** The wait after a pass over the shards that found nothing. @default 200 */
  readonly idleMs?: number;
  /**
   * The longest wait between passes while nothing comes: each empty pass doubles the wait up to
   * this, and a record brings it back to `idleMs`. @default 1_000
   */
  readonly idleMaxMs?: number;
  readonly onError?: (error: Error) => void;
  /**
   * The shards AWS would spread the table's stream over, each batch's records split among them by
   * item (one item's records stay in order in one shard) and handed at the same time, as the
   * mapping processes shards in parallel. DynamoDB Local's stream has one shard. @default 4
   */
  readonly parallelShards?: number;
};

/** Shards of a busy table's stream on AWS, where the stack's consumers see them in parallel. */
export const defaultParallelShards = 4;

/**
 * A batch's records split among `count` shards by item, each shard's in the stream's order. The
 * result has `count` entries, empty ones too: an item's shard is its place in it, in every batch,
 * so the aggregator's watermark per shard sees each item's records in one shard whatever else came.
 */
export function byShard(records: readonly StreamRecord[], count: number): StreamRecord[][] {
  const shards: StreamRecord[][] = Array.from({ length: Math.max(1, count) }, () => []);
  for (const record of records)
    shards[shardIndexOf(JSON.stringify(record.dynamodb?.Keys ?? {}), shards.length)]?.push(record);
  return shards;
}

/** The shard of `count` that `key` falls in, the same every time (a hash, as a stream cuts by key). */
export function shardIndexOf(key: string, count: number): number {
  let hash = 0;
  for (let i = 0; i < key.length; i++) hash = (Math.imul(hash, 31) + key.charCodeAt(i)) >>> 0;
  return hash % Math.max(1, count);
}

export type RunningStreamSource = {
  /** Resolves once every change made before the call has been handed to the handler and taken. */
  caughtUp(): Promise<void>;
  stop(): Promise<void>;
};

type ShardState = {
  iterator: string | undefined;
  done: boolean;
  parent: string | undefined;
  /** The last record handed on, where a fresh iterator starts after. */
  last: string | undefined;
  /** Ended, and the shards listed since, so its children are known. */
  childrenSought?: boolean;
};

/** How often the shards are listed again while none has ended. */
const discoverEveryMs = 5_000;

/** An iterator the stream no longer honours: the mapping takes a fresh one and reads on. */
const staleIterator = new Set(['TrimmedDataAccessException', 'ExpiredIteratorException']);

/**
 * A DynamoDB stream's event source as Lambda's event source mapping runs it for the summary
 * (lib/deploy/summary-aggregator.ts): each shard read from its start (TRIM_HORIZON) in
 * order, a child only after its parent is read to its end; records outside a node's partition
 * filtered out (the mapping's filter); each batch handed to the handler with the shard's id;
 * a batch whose handler throws is handed again, whole, until it is taken, as the mapping retries
 * (on AWS it is halved too, and let go after its retries; docs/local-and-aws.md).
 */
export function startStreamSource(options: StreamSourceOptions): RunningStreamSource {
  // The stream's reads are the mapping's, judged from the template (tools/rehearsal/stream-checks.ts);
  // only the handler's own calls are recorded as the function's.
  const streams = new DynamoDBStreamsClient({
    region: options.config.region,
    ...(options.config.endpoints?.dynamodb
      ? {
          endpoint: options.config.endpoints.dynamodb,
          credentials: { accessKeyId: 'meshlocal', secretAccessKey: 'meshlocal' },
        }
      : {}),
  });
  const onError =
    options.onError ??
    ((error: Error) =>
      process.stderr.write(`mesh stream source (${options.functionName}): ${error.message}\n`));
  const shards = new Map<string, ShardState>();
  let stopped = false;
  let passes = 0;
  const waiters: Array<{ after: number; resolve: () => void }> = [];

  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const idleMs = options.idleMs ?? 200;
  const idleMaxMs = Math.max(idleMs, options.idleMaxMs ?? 1_000);
  // The wait between passes, cut short by caughtUp() and stop(): a caller waiting on the stream
  // never pays the idle backoff.
  let wake: (() => void) | undefined;
  const idle = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      }
      wake = done;
    });

  async function streamArn(): Promise<string> {
    for (;;) {
      try {
        const { Table } = await options.dynamodb.send(
          new DescribeTableCommand({ TableName: options.tableName }),
        );
        if (Table?.LatestStreamArn) return Table.LatestStreamArn;
      } catch (error) {
        onError(error as Error);
      }
      if (stopped) throw new Error('stopped before the stream was found');
      await sleep(options.idleMs ?? 200);
    }
  }

  async function discover(arn: string): Promise<void> {
    let start: string | undefined;
    do {
      const { StreamDescription } = await streams.send(
        new DescribeStreamCommand({ StreamArn: arn, ...(start ? { ExclusiveStartShardId: start } : {}) }),
      );
      for (const shard of StreamDescription?.Shards ?? []) await track(arn, shard);
      start = StreamDescription?.LastEvaluatedShardId;
    } while (start);
  }

  async function track(arn: string, shard: Shard): Promise<void> {
    const id = shard.ShardId;
    if (!id || shards.has(id)) return;
    const { ShardIterator } = await streams.send(
      new GetShardIteratorCommand({ StreamArn: arn, ShardId: id, ShardIteratorType: 'TRIM_HORIZON' }),
    );
    shards.set(id, {
      iterator: ShardIterator,
      done: ShardIterator === undefined,
      parent: shard.ParentShardId,
      last: undefined,
    });
  }

  /**
   * A fresh iterator after the last record handed on, or at the shard's start when none was:
   * DynamoDB Local refuses an iterator taken while its shard was empty once records have come
   * (TrimmedDataAccessException), and on AWS an iterator expires after 15 minutes.
   */
  async function renew(arn: string, id: string, state: ShardState): Promise<void> {
    const { ShardIterator } = await streams.send(
      new GetShardIteratorCommand({
        StreamArn: arn,
        ShardId: id,
        ...(state.last
          ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', SequenceNumber: state.last }
          : { ShardIteratorType: 'TRIM_HORIZON' }),
      }),
    );
    state.iterator = ShardIterator;
    if (!state.iterator) state.done = true;
  }

  /** One read of a shard, its batch handed until taken; whether it had records. */
  async function readShard(arn: string, id: string, state: ShardState): Promise<boolean> {
    const parent = state.parent ? shards.get(state.parent) : undefined;
    if (state.done || (parent && !parent.done) || !state.iterator) return false;
    let page: Awaited<ReturnType<typeof getRecords>>;
    try {
      page = await getRecords(state.iterator);
    } catch (error) {
      if (!staleIterator.has((error as Error).name)) throw error;
      await renew(arn, id, state);
      return true;
    }
    const records = (page.Records ?? []).filter(counted);
    // AWS's shards, each read by its own invocation at the same time as the others'
    await Promise.all(
      byShard(records, options.parallelShards ?? defaultParallelShards).map(async (shard, index) => {
        for (let attempt = 1; shard.length > 0 && !stopped; attempt += 1) {
          try {
            await invocation(options.functionName, () =>
              asFunction(options.functionName, () =>
                options.handler({ Records: shard.map(asLambdaRecord), shardId: `${id}-${index}` }),
              ),
            );
            break;
          } catch (error) {
            onError(error as Error);
            // full jitter, as the mapping's retries of two shards do not keep in step
            await sleep(Math.random() * Math.min(5_000, 100 * 2 ** attempt));
          }
        }
      }),
    );
    state.last = page.Records?.at(-1)?.dynamodb?.SequenceNumber ?? state.last;
    state.iterator = page.NextShardIterator;
    if (!state.iterator) state.done = true;
    return (page.Records ?? []).length > 0;
  }

  function getRecords(iterator: string) {
    return streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: options.batchSize ?? 100 }));
  }

  /**
   * Whether to list the stream's shards again before this pass: at first, after a shard ended
   * (its children appear then), and every few seconds besides; listing them on every idle pass
   * was most of what an idle local runtime spent.
   */
  let listedAt = Number.NEGATIVE_INFINITY;
  const listAgain = () =>
    shards.size === 0 ||
    [...shards.values()].some((state) => state.done && !state.childrenSought) ||
    Date.now() - listedAt >= discoverEveryMs;

  async function loop(): Promise<void> {
    const arn = await streamArn();
    let wait = idleMs;
    while (!stopped) {
      let busy = false;
      try {
        if (listAgain()) {
          for (const state of shards.values()) if (state.done) state.childrenSought = true;
          await discover(arn);
          listedAt = Date.now();
        }
        for (const [id, state] of shards) busy = (await readShard(arn, id, state)) || busy;
      } catch (error) {
        // a pass that failed saw nothing for certain: it is not one that found the stream drained
        busy = true;
        onError(error as Error);
        await sleep(idleMs);
      }
      if (busy) wait = idleMs;
      else {
        passes += 1;
        for (const waiter of waiters.splice(0)) {
          if (passes > waiter.after) waiter.resolve();
          else waiters.push(waiter);
        }
        // a caller still waiting needs one more pass, not a wait first
        if (waiters.length === 0) {
          await idle(wait);
          wait = Math.min(idleMaxMs, wait * 2);
        }
      }
    }
  }

  // a failure is the source's own to report (onError); nothing is left to reject unheard
  const running = loop().catch((error: Error) => onError(error));
  return {
    caughtUp() {
      // A pass that found nothing and began after this call saw every change made before it.
      const caught = new Promise<void>((resolve) => waiters.push({ after: passes + 1, resolve }));
      wake?.();
      return caught;
    },
    async stop() {
      stopped = true;
      wake?.();
      await running;
      for (const waiter of waiters.splice(0)) waiter.resolve();
      streams.destroy();
    },
  };
}

/** The mapping's filter: only the changes of a node's partition reach the aggregator. */
function counted(record: StreamRecord): boolean {
  const pk = record.dynamodb?.Keys?.pk;
  return pk !== undefined && 'S' in pk && typeof pk.S === 'string' && pk.S.startsWith(countedPartitionPrefix);
}

/** A stream record as Lambda hands it: the same fields, the event source named. */
const asLambdaRecord = (record: StreamRecord): DynamoDBRecord =>
  ({
    eventID: record.eventID,
    eventName: record.eventName,
    eventSource: 'aws:dynamodb',
    eventVersion: record.eventVersion,
    awsRegion: record.awsRegion,
    dynamodb: {
      ...record.dynamodb,
      ApproximateCreationDateTime:
        record.dynamodb?.ApproximateCreationDateTime instanceof Date
          ? record.dynamodb.ApproximateCreationDateTime.getTime() / 1000
          : undefined,
    },
  }) as DynamoDBRecord;
