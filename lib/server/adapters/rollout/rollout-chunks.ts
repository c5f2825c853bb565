import { createHash, randomBytes } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { RolloutRaceError } from '../../core/rollout/errors.ts';
import type { NodeRun } from '../../core/rollout/pages.ts';
import type { NodeOutcome, RolloutRecord, Wave } from '../../core/rollout/record.ts';
import { getItems, type Item, queryAll, writeItems } from '../dynamodb/requests.ts';

/**
 * A rollout's nodes in the inventory table, a wave's part at a time:
 *
 * | pk                  | sk              | attributes |
 * |---------------------|-----------------|------------|
 * | `rollout#<id>`      | `nodes#<write>#<n>` | body: the part's node outcomes as gzipped JSON (B), count (N) |
 *
 * A part holds at most `nodesPerPart` nodes, a number chosen so that even the largest outcome
 * (a node name of 63 letters, a revision of 16 digits, a report's step of 200 characters each
 * escaped as `\u0001`, paired) leaves the part's JSON under `partBytes`: far below an item's
 * 400 KB whatever the hosts report. A part is written under a new key (`<write>` is random to
 * each write) before the header that names it, and a part no header names any more is deleted
 * after: a reader holding a header always finds the parts it names, and two steps racing never
 * write the same key. A part whose nodes did not change is named again, not written.
 */
export const partBytes = 300_000;
const largestOutcome: NodeOutcome = {
  node: 'n'.repeat(63),
  state: 'timed-out',
  revision: Number.MAX_SAFE_INTEGER,
  step: '\u0001'.repeat(200),
  paired: true,
};
/** The JSON of the largest outcome, and the comma after it. */
export const largestOutcomeBytes = Buffer.byteLength(JSON.stringify(largestOutcome)) + 1;
export const nodesPerPart = Math.floor((partBytes - 2) / largestOutcomeBytes);

/** How the store keeps one wave: its parts in order, and the wave's place when the rollout started. */
export type Kept = {
  readonly parts: ReadonlyArray<{ readonly sk: string; readonly count: number; readonly digest: string }>;
  /** Its index when the rollout was cut: what a node's claim names (a wave emptied by moves is dropped). */
  readonly cut: number;
};

export const nodesPartition = (id: string) => `rollout#${id}`;
/** Every rollout's parts, as an IAM leading-key pattern (`rollouts#…` is not among them). */
export const rolloutPartsPartitions = 'rollout#*';
const what = 'the inventory table';

const digestOf = (json: string) => createHash('sha256').update(json).digest('base64url').slice(0, 16);

/** Each wave held with its nodes cut into parts: the items to put, the kept parts they replace. */
export function partsOf(record: RolloutRecord): {
  readonly waves: Wave[];
  readonly puts: Item[];
  readonly replaced: string[];
} {
  const write = randomBytes(4).toString('hex');
  const puts: Item[] = [];
  const replaced: string[] = [];
  const waves = record.waves.map((wave, index): Wave => {
    if (!wave.nodes) return wave;
    const before = (wave.kept as Kept | undefined)?.parts ?? [];
    const parts: Array<Kept['parts'][number]> = [];
    for (let at = 0, n = 0; at < wave.nodes.length; at += nodesPerPart, n += 1) {
      const nodes = wave.nodes.slice(at, at + nodesPerPart);
      const json = JSON.stringify(nodes);
      const digest = digestOf(json);
      const same = before[n];
      if (same && same.digest === digest && same.count === nodes.length) {
        parts.push(same);
        continue;
      }
      const sk = `nodes#${write}#${index}.${n}`;
      puts.push({ pk: nodesPartition(record.id), sk, count: nodes.length, body: gzipSync(json) });
      parts.push({ sk, count: nodes.length, digest });
    }
    const kept = new Set(parts.map((p) => p.sk));
    replaced.push(...before.map((p) => p.sk).filter((sk) => !kept.has(sk)));
    const cut = (wave.kept as Kept | undefined)?.cut ?? index;
    return { ...wave, kept: { parts, cut } satisfies Kept };
  });
  return { waves, puts, replaced };
}

export class RolloutParts {
  readonly #client: DynamoDBDocumentClient;
  readonly #tableName: string;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.#client = client;
    this.#tableName = tableName;
  }

  async put(items: readonly Item[]): Promise<void> {
    await writeItems(this.#client, what, this.#tableName, { puts: items });
  }

  async remove(id: string, sks: readonly string[]): Promise<void> {
    const deletes = sks.map((sk) => ({ pk: nodesPartition(id), sk }));
    await writeItems(this.#client, what, this.#tableName, { deletes });
  }

  /** Every part of the rollout, named or not: what a start that died left (its partition holds its parts alone). */
  async removeAll(id: string): Promise<void> {
    const items = await queryAll(this.#client, what, {
      TableName: this.#tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': nodesPartition(id) },
      ProjectionExpression: 'pk, sk',
      ConsistentRead: true,
    });
    await writeItems(this.#client, what, this.#tableName, {
      deletes: items.map((item) => ({ pk: String(item.pk), sk: String(item.sk) })),
    });
  }

  /** The parts named, read in one go, each part's nodes by its key. */
  async read(id: string, sks: readonly string[]): Promise<Map<string, NodeOutcome[]>> {
    const keys = sks.map((sk) => ({ pk: nodesPartition(id), sk }));
    const items = await getItems(this.#client, what, this.#tableName, keys);
    const nodes = new Map<string, NodeOutcome[]>();
    for (const sk of sks) {
      const item = items.get(`${nodesPartition(id)}|${sk}`);
      // a part the header read names is gone only once a newer header holds (a write deletes
      // the parts it replaced after): the record changed meanwhile, to be read again
      if (!item)
        throw new RolloutRaceError(id, {
          cause: new Error(`its part ${sk} is gone: a newer record replaced it`),
        });
      nodes.set(sk, JSON.parse(gunzipSync(item.body as Uint8Array).toString('utf8')) as NodeOutcome[]);
    }
    return nodes;
  }

  /** The record with these waves' nodes read from their parts. */
  async withNodes(record: RolloutRecord, indices: readonly number[]): Promise<RolloutRecord> {
    const wanted = new Set(indices.filter((i) => record.waves[i] && !record.waves[i]?.nodes));
    const sks = record.waves.flatMap((w, i) => (wanted.has(i) ? keptOf(w).parts.map((p) => p.sk) : []));
    const parts = sks.length > 0 ? await this.read(record.id, sks) : new Map<string, NodeOutcome[]>();
    return {
      ...record,
      waves: record.waves.map((w, i) =>
        wanted.has(i) ? { ...w, nodes: keptOf(w).parts.flatMap((p) => parts.get(p.sk) ?? []) } : w,
      ),
    };
  }

  /** The parts from the one holding the `at`-th node on, until their JSON passes `bytes`. */
  async from(record: RolloutRecord, at: number, bytes: number): Promise<NodeRun[]> {
    const chosen: Array<{ wave: number; sk: string; skip: number }> = [];
    let offset = 0;
    let size = 0;
    record.waves.forEach((w, wave) => {
      for (const part of keptOf(w).parts) {
        const end = offset + part.count;
        if (end > at && size <= bytes) {
          chosen.push({ wave, sk: part.sk, skip: Math.max(0, at - offset) });
          // a part's JSON is at most partBytes; most are far smaller, so a page reads a few more
          size += Math.min(partBytes, part.count * typicalOutcomeBytes);
        }
        offset = end;
      }
    });
    const parts = await this.read(
      record.id,
      chosen.map((c) => c.sk),
    );
    const runs: NodeRun[] = [];
    for (const c of chosen) {
      const nodes = (parts.get(c.sk) ?? []).slice(c.skip);
      const last = runs.at(-1);
      if (last && last.wave === c.wave)
        runs[runs.length - 1] = { wave: c.wave, nodes: [...last.nodes, ...nodes] };
      else runs.push({ wave: c.wave, nodes });
    }
    return runs;
  }

  /**
   * The rollout's nodes from the `from`-th to before the `upto`-th (wave after wave, part after
   * part), each with the wave it was cut into: reads only the parts that hold them. A paired
   * node (not the rollout's own) is counted but not given.
   */
  async span(
    record: RolloutRecord,
    from: number,
    upto: number,
  ): Promise<Array<{ readonly node: string; readonly cut: number }>> {
    const chosen: Array<{ sk: string; cut: number; skip: number; take: number }> = [];
    let offset = 0;
    for (const w of record.waves) {
      const { parts, cut } = keptOf(w);
      for (const part of parts) {
        const end = offset + part.count;
        if (end > from && offset < upto)
          chosen.push({
            sk: part.sk,
            cut,
            skip: Math.max(0, from - offset),
            take: Math.min(part.count, upto - offset),
          });
        offset = end;
      }
    }
    if (chosen.length === 0) return [];
    const parts = await this.read(
      record.id,
      chosen.map((c) => c.sk),
    );
    return chosen.flatMap((c) =>
      (parts.get(c.sk) ?? [])
        .slice(c.skip, c.take)
        .filter((n) => !n.paired)
        .map((n) => ({ node: n.node, cut: c.cut })),
    );
  }
}

/** An outcome as most are (a node of about 12 letters, waiting or applied at a revision). */
const typicalOutcomeBytes = 60;

export const keptOf = (wave: Wave): Kept => (wave.kept as Kept | undefined) ?? { parts: [], cut: -1 };
