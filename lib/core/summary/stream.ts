import { type CounterName, type Deltas, deltasOf, type Item, sumDeltas } from './counters.ts';

/**
 * A table's change as the stream aggregator sees it, taken from a DynamoDB stream record (on
 * AWS through Lambda's event source mapping, locally through lib/runtime/stream-source.ts):
 * images unmarshalled, so the core knows nothing of DynamoDB's types.
 */
export type Change = {
  readonly sequence: string;
  readonly before: Item | undefined;
  readonly after: Item | undefined;
};

/** A run of changes applied together: their summed deltas and the last sequence number among them. */
export type Chunk = { readonly deltas: Deltas; readonly first: string; readonly last: string };

/**
 * Sequence numbers are strings of digits of varying length; padded, they compare as strings,
 * as the watermark's condition compares them in the table.
 */
export const sequenceKey = (sequence: string) => sequence.padStart(48, '0');

/** The changes after the shard's watermark (all of them when there is none), in their order. */
export function changesAfter(changes: readonly Change[], watermark: string | undefined): Change[] {
  if (watermark === undefined) return [...changes];
  return changes.filter((change) => sequenceKey(change.sequence) > watermark);
}

/**
 * Changes cut into runs whose summed deltas name at most `maxCounters` counters, each applied in
 * one transaction with the shard's watermark (a transaction holds at most 100 items). A run
 * whose changes move nothing is kept all the same when it is the last, so the watermark moves
 * past it; runs of nothing before a run that moves something are folded into it.
 */
export function chunksOf(changes: readonly Change[], maxCounters: number): Chunk[] {
  const chunks: Chunk[] = [];
  let run: Deltas[] = [];
  let names = new Set<CounterName>();
  let first: string | undefined;
  let last: string | undefined;
  const close = () => {
    if (first !== undefined && last !== undefined) chunks.push({ deltas: sumDeltas(run), first, last });
    run = [];
    names = new Set();
    first = undefined;
    last = undefined;
  };
  for (const change of changes) {
    const deltas = deltasOf(change.before, change.after);
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

/** Only a node's partition counts (counters.ts): the event source's filter passes nothing else. */
export const countedPartitionPrefix = 'node#';
