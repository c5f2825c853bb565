import { pageOfLists } from '../answer-pages.ts';
import type { NodeOutcome, RolloutRecord, WaveTally } from './record.ts';
import { tallyOf } from './record.ts';

/**
 * A rollout's answer a page at a time (docs/http-api.md, "Pages and filters"): its header and
 * every wave's size and counts on every page, the nodes cut as `pageOfLists` cuts a plan's lists
 * (counted wave after wave), so no answer passes the page's bytes whatever the rollout's size.
 */
export type AnsweredWave = {
  readonly nodes: readonly NodeOutcome[];
  readonly size: number;
  readonly counts: WaveTally['counts'];
  readonly sentAt?: string;
  readonly endedAt?: string;
};
export type RolloutAnswer = Omit<RolloutRecord, 'waves'> & { readonly waves: readonly AnsweredWave[] };

/** The nodes of one wave from a place in the rollout: what a page is cut from. */
export type NodeRun = { readonly wave: number; readonly nodes: readonly NodeOutcome[] };

/** Where the nodes of a page may come from: all the waves, or one (`?wave=K`, from 0). */
export function spanOf(
  record: RolloutRecord,
  wave?: number,
): { readonly start: number; readonly end: number } {
  const sizes = record.waves.map((w) => tallyOf(w).size);
  if (wave === undefined) return { start: 0, end: sizes.reduce((a, b) => a + b, 0) };
  const start = sizes.slice(0, wave).reduce((a, b) => a + b, 0);
  return { start, end: start + (sizes[wave] ?? 0) };
}

/** The runs of a record read with every wave's nodes, from `at` on. */
export function runsOf(record: RolloutRecord, at: number): NodeRun[] {
  const runs: NodeRun[] = [];
  let offset = 0;
  record.waves.forEach((w, wave) => {
    const nodes = w.nodes ?? [];
    const from = Math.max(0, at - offset);
    if (from < nodes.length) runs.push({ wave, nodes: nodes.slice(from) });
    offset += nodes.length;
  });
  return runs;
}

/**
 * One page: the header, and the nodes of `runs` (which start at node `at` of the rollout) up to
 * `end` (and at most `limit` of them) while the page fits `budget`. `next` is the node the next page starts at, null at the end.
 */
export function rolloutPage(
  record: RolloutRecord,
  runs: readonly NodeRun[],
  at: number,
  end: number,
  budget: number,
  limit = Number.POSITIVE_INFINITY,
): { readonly page: RolloutAnswer; readonly next: number | null } {
  const lists = record.waves.map((): NodeOutcome[] => []);
  const wanted = Math.min(end - at, limit);
  let room = wanted;
  for (const run of runs) {
    const taken = run.nodes.slice(0, Math.max(0, room));
    lists[run.wave]?.push(...taken);
    room -= taken.length;
  }
  const loaded = wanted - room;
  const doc: RolloutAnswer = {
    ...headerOf(record),
    waves: record.waves.map((w, index) => {
      const { size, counts } = tallyOf(w);
      return {
        nodes: lists[index] ?? [],
        size,
        counts,
        ...(w.sentAt ? { sentAt: w.sentAt } : {}),
        ...(w.endedAt ? { endedAt: w.endedAt } : {}),
      };
    }),
  };
  const paths = record.waves.map((_, index) => ['waves', String(index), 'nodes']);
  const { page, next } = pageOfLists(doc, paths, 0, budget);
  const after = at + (next ?? loaded);
  return { page, next: after < end ? after : null };
}

function headerOf(record: RolloutRecord): Omit<RolloutRecord, 'waves'> {
  const { waves: _waves, ...header } = record;
  return header;
}
