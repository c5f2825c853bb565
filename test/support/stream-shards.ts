import { shardIndexOf } from '../../lib/local/stream-source.ts';
import type { Item } from '../../lib/server/core/summary/counters.ts';
import type { SummaryCounters } from '../../lib/server/core/summary/ports.ts';
import type { Change } from '../../lib/server/core/summary/stream.ts';

/**
 * A test's stand-in for a DynamoDB stream of several shards, as Lambda's event source mapping
 * hands them to the summary aggregator on AWS: every change of one partition on one shard, in
 * order; the shards' batches applied at the same time.
 */
export type ShardedChanges = {
  /** Each shard's changes, in order. */
  readonly shards: ReadonlyMap<string, readonly Change[]>;
  /** The items as the walk left them: what a full read counts. */
  readonly items: readonly Item[];
  readonly lastSequence: number;
};

/** A small deterministic generator (mulberry32): a failing walk is the same walk again. */
function random(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T };
}

const modules = ['app', 'db', 'cache'];
const versions = ['1.0', '2.0', undefined];

/** One item of a node's partition as the stores write it, picked at random. */
function anItem(r: ReturnType<typeof random>, node: string): Item {
  const pk = `node#${node}`;
  switch (r.pick(['node', 'enrolment', 'presence', 'mark', 'report', 'module', 'health', 'delivery'])) {
    case 'node':
      return { pk, sk: 'node', node };
    case 'enrolment':
      return { pk, sk: 'enrolment', enrolledAt: 't' };
    case 'presence':
      return { pk, sk: 'presence', online: r.next() < 0.5 };
    case 'mark':
      return { pk, sk: 'mark', marks: 1 };
    case 'report': {
      const state = r.pick(['applied', 'failed', 'applying']);
      const revision = Math.floor(r.next() * 4);
      const named = Object.fromEntries(modules.map((m) => [m, r.pick(versions) ?? null]));
      return {
        pk,
        sk: 'report',
        state,
        revision,
        ...(state === 'applied' ? { appliedRevision: revision, appliedModules: named } : {}),
        ...(state === 'failed' ? { failedModules: named } : {}),
      };
    }
    case 'module': {
      const module = r.pick(modules);
      const version = r.pick(versions);
      return { pk, sk: `module#${module}`, module, ...(version ? { version } : {}) };
    }
    case 'health':
      return { pk, sk: 'health', state: r.pick(['healthy', 'unhealthy', 'unknown']) };
    default:
      return { pk, sk: 'delivery', revision: 1, waitingRelations: 1 + Math.floor(r.next() * 5) };
  }
}

const keyOf = (item: Item) => `${String(item.pk)}|${String(item.sk)}`;

/** A partition's shard, the same way every time (a stream keeps a partition's changes on one shard). */
function shardOf(pk: string, shardIds: readonly string[]): string {
  return shardIds[shardIndexOf(pk, shardIds.length)] as string;
}

/**
 * `writes` puts and deletes of node items (on `from`'s items when given), each a change with
 * both images, cut into `shards` shards by partition.
 */
export function shardedWalk(options: {
  readonly seed: number;
  readonly nodes: number;
  readonly writes: number;
  readonly shards: number;
  readonly firstSequence: number;
  readonly from?: readonly Item[];
  readonly shardIds?: readonly string[];
}): ShardedChanges {
  const r = random(options.seed);
  const shardIds =
    options.shardIds ??
    Array.from({ length: options.shards }, (_, i) => `shardId-0000000${i}-${options.seed}`);
  const items = new Map((options.from ?? []).map((item) => [keyOf(item), item]));
  const shards = new Map(shardIds.map((id) => [id, [] as Change[]]));
  let sequence = options.firstSequence;
  for (let write = 0; write < options.writes; write += 1) {
    const fresh = anItem(r, `n${Math.floor(r.next() * options.nodes)}`);
    const key = keyOf(fresh);
    const before = items.get(key);
    const after = before && r.next() < 0.2 ? undefined : fresh;
    if (after) items.set(key, after);
    else items.delete(key);
    shards.get(shardOf(String(fresh.pk), shardIds))?.push({ sequence: String(sequence), before, after });
    sequence += 1;
  }
  return { shards, items: [...items.values()], lastSequence: sequence - 1 };
}

/**
 * Every shard's changes applied in batches, the shards at the same time. With `again`, each batch
 * is delivered again whole and its second half again, as Lambda retries and bisects. A batch that
 * fails is noted and applied again, as the event source does, until it is taken.
 */
export async function drainShards(
  counters: SummaryCounters,
  shards: ReadonlyMap<string, readonly Change[]>,
  options: { readonly batch: number; readonly again: boolean },
): Promise<{ readonly failures: string[]; readonly batches: number }> {
  const failures: string[] = [];
  let batches = 0;
  const deliver = async (shard: string, changes: readonly Change[]) => {
    for (let attempt = 0; ; attempt += 1) {
      try {
        batches += 1;
        await counters.apply(shard, changes);
        return;
      } catch (error) {
        failures.push(`${shard}: ${(error as Error).name}: ${(error as Error).message}`);
        if (attempt >= 50) throw error;
        await new Promise((resolve) => setTimeout(resolve, 5 + attempt * 5));
      }
    }
  };
  await Promise.all(
    [...shards].map(async ([shard, changes]) => {
      for (let start = 0; start < changes.length; start += options.batch) {
        const batch = changes.slice(start, start + options.batch);
        await deliver(shard, batch);
        if (options.again) {
          await deliver(shard, batch);
          await deliver(shard, batch.slice(Math.floor(batch.length / 2)));
        }
      }
    }),
  );
  return { failures, batches };
}
