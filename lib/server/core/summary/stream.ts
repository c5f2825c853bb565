import { type CounterName, type Deltas, deltasOf, type Item, sumDeltas } from './counters.ts';

/**
 * A table's change as the stream aggregator sees it, taken from a DynamoDB stream record (on
 * AWS through Lambda's event source mapping, locally through lib/local/stream-source.ts):
 * images unmarshalled, so the core knows nothing of DynamoDB's types.
 */
export type Change = {
  readonly sequence: string;
  readonly before: Item | undefined;
  readonly after: Item | undefined;
  /** When the change was made (the record's ApproximateCreationDateTime, epoch seconds), when known. */
  readonly madeAt?: number;
};

/** The batches of changes the aggregator is handed at most (its event source mapping's, and the local source's). */
export const aggregatorBatchSize = 100;

/**
 * A change counted this long after it was made says the aggregator is catching up. A record's
 * creation time is rounded down to the second on AWS, and to the minute by DynamoDB Local: 90 s
 * is past both roundings with half a minute to spare.
 */
export const catchingUpAfterSeconds = 90;

/**
 * How long after a batch that was behind the summary still says it is catching up: while it
 * catches up, the aggregator is handed batch after batch (its event source reads on at once), so
 * a shard behind whose last batch is this old has read its backlog to the end.
 */
export const catchingUpForSeconds = 15;

/**
 * Whether a batch says its shard is behind the table: a full batch (more waited behind it), or
 * changes counted long after they were made (a restart reading the stream again from its start,
 * a backlog after an outage). A batch that is neither says the shard has caught up; a full batch
 * that was the last of a backlog stops saying so once no batch has come for a while
 * (`shardCatchingUp`).
 */
export function batchBehind(changes: readonly Change[], nowSeconds: number): boolean {
  if (changes.length >= aggregatorBatchSize) return true;
  const newest = Math.max(...changes.map((change) => change.madeAt ?? nowSeconds));
  return nowSeconds - newest > catchingUpAfterSeconds;
}

/** Whether a shard is catching up: its last batch was behind, and was counted a moment ago. */
export const shardCatchingUp = (
  shard: { readonly behind?: unknown; readonly countedAt?: unknown },
  nowSeconds: number,
) =>
  shard.behind === true &&
  typeof shard.countedAt === 'number' &&
  nowSeconds - shard.countedAt <= catchingUpForSeconds;

/**
 * A run of changes applied together: their summed deltas, the first and last sequence numbers
 * among them, and `mark`, the shard's watermark once it is applied.
 */
export type Chunk = {
  readonly deltas: Deltas;
  readonly first: string;
  readonly last: string;
  readonly mark: string;
  /** How many changes this chunk is the first to apply (a part after the first applies none anew). */
  readonly changes: number;
};

/**
 * Sequence numbers are strings of digits of varying length; padded, they compare as strings,
 * as the watermark's condition compares them in the table.
 */
export const sequenceKey = (sequence: string) => sequence.padStart(48, '0');

/**
 * The watermark says how far a shard is counted: `<sequenceKey>` when that change and every one
 * before it are, `<sequenceKey>#<k>` when parts 0 to k of that change are (a change that moves
 * more counters than one transaction holds, such as a report naming many modules, is applied in
 * parts, in the order of its counters' names).
 */
function watermarkOf(watermark: string): { readonly key: string; readonly part: number | undefined } {
  const [key = '', part] = watermark.split('#');
  return { key, part: part === undefined ? undefined : Number(part) };
}

/** The changes after the shard's watermark (all of them when there is none), in their order. */
export function changesAfter(changes: readonly Change[], watermark: string | undefined): Change[] {
  if (watermark === undefined) return [...changes];
  const { key, part } = watermarkOf(watermark);
  return changes.filter((change) => {
    const at = sequenceKey(change.sequence);
    return at > key || (part !== undefined && at === key);
  });
}

/**
 * Changes cut into runs whose summed deltas name at most `maxCounters` counters, each applied in
 * one transaction with the shard's watermark (a transaction holds at most 100 items). A run
 * whose changes move nothing is kept all the same when it is the last, so the watermark moves
 * past it; runs of nothing before a run that moves something are folded into it. A change that
 * alone moves more than `maxCounters` is a run of its own cut in parts, and `watermark` (the
 * shard's, as read) says which of its parts are applied already.
 */
export function chunksOf(changes: readonly Change[], maxCounters: number, watermark?: string): Chunk[] {
  const resumed = watermark === undefined ? undefined : watermarkOf(watermark);
  const chunks: Chunk[] = [];
  let run: Deltas[] = [];
  let names = new Set<CounterName>();
  let first: string | undefined;
  let last: string | undefined;
  const close = () => {
    if (first !== undefined && last !== undefined)
      chunks.push({ deltas: sumDeltas(run), first, last, mark: sequenceKey(last), changes: run.length });
    run = [];
    names = new Set();
    first = undefined;
    last = undefined;
  };
  for (const change of changes) {
    const deltas = deltasOf(change.before, change.after);
    const key = sequenceKey(change.sequence);
    const fromPart = resumed?.part !== undefined && resumed.key === key ? resumed.part + 1 : 0;
    if (deltas.size > maxCounters || fromPart > 0) {
      close();
      const parts = partsOf(deltas, maxCounters);
      for (let part = fromPart; part < parts.length; part += 1)
        chunks.push({
          deltas: parts[part] as Deltas,
          first: change.sequence,
          last: change.sequence,
          mark: part < parts.length - 1 ? `${key}#${part}` : key,
          changes: part === fromPart ? 1 : 0,
        });
      continue;
    }
    const grown = new Set([...names, ...deltas.keys()]);
    if (grown.size > maxCounters && run.length > 0) close();
    run.push(deltas);
    for (const name of deltas.keys()) names.add(name);
    first ??= change.sequence;
    last = change.sequence;
  }
  close();
  return chunks;
}

/** One change's deltas cut into parts of at most `maxCounters`, the same way every time. */
function partsOf(deltas: Deltas, maxCounters: number): Deltas[] {
  const names = [...deltas.keys()].sort();
  const parts: Deltas[] = [];
  for (let start = 0; start < names.length; start += maxCounters)
    parts.push(
      new Map(names.slice(start, start + maxCounters).map((name) => [name, deltas.get(name) as number])),
    );
  return parts;
}

/** Only a node's partition counts (counters.ts): the event source's filter passes nothing else. */
export const countedPartitionPrefix = 'node#';
