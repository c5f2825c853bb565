import { randomBytes } from 'node:crypto';
import * as z from 'zod';
import { type BatchResult, batchResultSchema } from './flow-schemas.ts';

export { workId } from './flow-schemas.ts';

/**
 * A push's work: the node lists its flow passes from step to step, kept in the store under the
 * push's work id, so the flow state carries ids, counts and one page of names whatever the size
 * of the mesh (docs/decisions/push-state-in-the-store.md). Step Functions refuses a state, an
 * execution input or a task's input or output over 256 KiB; a push of 50,000 behind nodes with
 * 63-character names carries about 3.3 MB of names in each list.
 *
 * Every part is written whole by one step and never changed by another: a step run again (a
 * Retry) writes the same keys again, so a part is never counted twice.
 */
export interface PushWork {
  /** Keeps `value` (plain JSON of any size: the adapter splits it) under `key`, over what was there. */
  put(work: string, key: string, value: unknown): Promise<void>;
  /** What `key` keeps, or undefined. */
  read(work: string, key: string): Promise<unknown>;
  /** What every key beginning with `prefix` keeps, in the order of the keys. */
  readAll(work: string, prefix: string): Promise<unknown[]>;
}

export const newWorkId = (random = () => randomBytes(6).toString('hex')) => `work-${random()}`;

const round = (n: number) => `r${String(n).padStart(4, '0')}`;
const page = (n: number) => String(n).padStart(6, '0');

/** The keys of a push's work: each round's pages, each batch's result, each round's fold, the answer's lists. */
export const workKeys = {
  /** A wave's nodes, kept before its flow starts (its input carries none). */
  wave: 'wave',
  page: (r: number, p: number) => `page/${round(r)}/${page(p)}`,
  /** Results sort by round, then by their batch's first node: the order the batches were sent in. */
  result: (r: number, firstNode: string) => `result/${round(r)}/${firstNode}`,
  resultsOf: (r: number) => `result/${round(r)}/`,
  results: 'result/',
  fold: (r: number) => `fold/${round(r)}`,
  behind: 'behind',
} as const;

/** What a round leaves for the next: the lists a push names at its end, and who it leaves as they are. */
export const foldSchema = z.object({
  unsendable: batchResultSchema.shape.unsendable,
  heldBack: batchResultSchema.shape.heldBack,
  settled: z.array(z.string()),
  flushedCount: z.number().int().min(0),
});
export type Fold = z.infer<typeof foldSchema>;
export const emptyFold: Fold = { unsendable: [], heldBack: [], settled: [], flushedCount: 0 };

export async function readPage(work: PushWork, id: string, key: string): Promise<string[]> {
  return z
    .array(z.string())
    .parse((await work.read(id, key)) ?? [])
    .slice();
}

export async function readResults(work: PushWork, id: string, prefix: string): Promise<BatchResult[]> {
  return (await work.readAll(id, prefix)).map((value) => batchResultSchema.parse(value));
}

const encoder = new TextEncoder();

/** A push's work held in memory: a plan's, which writes nowhere, and the tests'. */
export class MemoryPushWork implements PushWork {
  readonly #parts = new Map<string, string>();

  async put(work: string, key: string, value: unknown): Promise<void> {
    this.#parts.set(`${work}|${key}`, JSON.stringify(value));
  }

  async read(work: string, key: string): Promise<unknown> {
    const kept = this.#parts.get(`${work}|${key}`);
    return kept === undefined ? undefined : JSON.parse(kept);
  }

  async readAll(work: string, prefix: string): Promise<unknown[]> {
    const start = `${work}|${prefix}`;
    return [...this.#parts.keys()]
      .filter((key) => key.startsWith(start))
      .sort()
      .map((key) => JSON.parse(this.#parts.get(key) as string));
  }

  /** The largest part kept, in bytes of JSON: what the store must hold in one value. */
  largestPart(): number {
    return Math.max(0, ...[...this.#parts.values()].map((value) => encoder.encode(value).length));
  }
}
