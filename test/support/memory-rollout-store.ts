import type { HoldingRollout } from '../../lib/server/core/hold/held-back.ts';
import { isDriven } from '../../lib/server/core/rollout/claims.ts';
import { RolloutOverlapError, RolloutRaceError } from '../../lib/server/core/rollout/errors.ts';
import type { NodeRun } from '../../lib/server/core/rollout/pages.ts';
import type {
  ClaimStep,
  RolloutPage,
  RolloutStore,
  StepBudget,
} from '../../lib/server/core/rollout/ports.ts';
import {
  holdsNodes,
  type NodeOutcome,
  notSentCount,
  type RolloutRecord,
  tallyOf,
} from '../../lib/server/core/rollout/record.ts';
import { summaryOf } from '../../lib/server/core/rollout/service.ts';

type Kept = { readonly cut: number };

/**
 * A rollout store in memory, laid out as the DynamoDB one is: a header (each wave's tally), each
 * wave's nodes apart, a claim per own node, claimed a step at a time. It records which waves each
 * read asked for, so a test sees that a step reads its waves and no other.
 */
export class MemoryRolloutStore implements RolloutStore {
  readonly headers = new Map<string, RolloutRecord>();
  readonly nodes = new Map<string, NodeOutcome[]>();
  readonly claims = new Map<string, { rollout: string; cut: number }>();
  /** Every wave read with its nodes, as `<id>/<index>`. */
  readonly reads: string[] = [];

  async create(record: RolloutRecord): Promise<boolean> {
    if (this.headers.has(record.id)) return false;
    this.#keep({ ...record, waves: record.waves.map((w, cut) => ({ ...w, kept: { cut } })) });
    return true;
  }

  /** The rollout's nodes in order, each with the wave it was cut into. */
  #cut(record: RolloutRecord) {
    return record.waves.flatMap((w) => {
      const { cut } = w.kept as Kept;
      return (this.nodes.get(`${record.id}/${cut}`) ?? []).map((n) => ({ ...n, cut }));
    });
  }

  async claim(record: RolloutRecord, from: number, budget: StepBudget): Promise<ClaimStep> {
    const span = this.#cut(record)
      .slice(from, from + budget.nodes)
      .filter((n) => !n.paired);
    const held = new Map<string, string[]>();
    for (const n of span) {
      const claim = this.claims.get(n.node);
      const holder = claim && this.headers.get(claim.rollout);
      const state = holder?.undoneBy === record.id ? 'undone' : holder?.state;
      if (claim && claim.rollout !== record.id && (state === undefined || holdsNodes(state)))
        held.set(claim.rollout, [...(held.get(claim.rollout) ?? []), n.node]);
    }
    const [holder] = [...held].sort((a, b) => b[1].length - a[1].length);
    if (holder)
      return {
        overlap: new RolloutOverlapError(
          holder[0],
          holder[1].length,
          this.headers.get(holder[0])?.state ?? 'starting',
          holder[1].slice(0, 5),
        ),
      };
    for (const n of span) this.claims.set(n.node, { rollout: record.id, cut: n.cut });
    return { claimed: Math.min(this.#cut(record).length, from + budget.nodes) };
  }

  async sweep(): Promise<number> {
    return 0;
  }

  async release(record: RolloutRecord, from: number, upto: number, budget: StepBudget): Promise<number> {
    const end = Math.min(upto, from + budget.nodes);
    for (const n of this.#cut(record).slice(from, end))
      if (this.claims.get(n.node)?.rollout === record.id) this.claims.delete(n.node);
    return end;
  }

  async write(record: RolloutRecord): Promise<RolloutRecord> {
    if (this.headers.get(record.id)?.version !== record.version) throw new RolloutRaceError(record.id);
    const next = { ...record, version: record.version + 1 };
    this.#keep(next);
    return next;
  }

  #keep(record: RolloutRecord) {
    for (const w of record.waves)
      if (w.nodes) this.nodes.set(`${record.id}/${(w.kept as Kept).cut}`, [...w.nodes]);
    this.headers.set(record.id, {
      ...record,
      waves: record.waves.map(({ nodes: _nodes, ...w }, index) => ({
        ...w,
        tally: tallyOf(record.waves[index] ?? w),
      })),
    });
  }

  async read(id: string): Promise<RolloutRecord | undefined> {
    return this.headers.get(id);
  }

  async withNodes(record: RolloutRecord, waves: readonly number[]): Promise<RolloutRecord> {
    return {
      ...record,
      waves: record.waves.map((w, index) => {
        if (!waves.includes(index) || w.nodes) return w;
        this.reads.push(`${record.id}/${index}`);
        return { ...w, nodes: this.nodes.get(`${record.id}/${(w.kept as Kept).cut}`) ?? [] };
      }),
    };
  }

  async nodesFrom(record: RolloutRecord, at: number): Promise<NodeRun[]> {
    const whole = await this.withNodes(
      record,
      record.waves.map((_, i) => i),
    );
    const runs: NodeRun[] = [];
    let offset = 0;
    whole.waves.forEach((w, wave) => {
      const nodes = w.nodes ?? [];
      if (offset + nodes.length > at) runs.push({ wave, nodes: nodes.slice(Math.max(0, at - offset)) });
      offset += nodes.length;
    });
    return runs;
  }

  async held(record: RolloutRecord, nodes: readonly string[]): Promise<ReadonlyMap<string, number>> {
    const now = new Map(record.waves.map((w, index) => [(w.kept as Kept).cut, index]));
    const held = new Map<string, number>();
    for (const node of nodes) {
      const claim = this.claims.get(node);
      if (claim?.rollout === record.id) held.set(node, now.get(claim.cut) ?? -1);
    }
    return held;
  }

  async moveClaims(record: RolloutRecord, wave: number, nodes: readonly string[]): Promise<void> {
    const into = record.waves[wave];
    if (!into) return;
    for (const node of nodes) {
      const claim = this.claims.get(node);
      if (claim?.rollout === record.id) this.claims.set(node, { ...claim, cut: (into.kept as Kept).cut });
    }
  }

  /** What the holding items say (rollout-store.ts): each rollout holding nodes, and the cut index of its last wave sent. */
  holding(): Map<string, HoldingRollout> {
    const holding = new Map<string, HoldingRollout>();
    for (const record of this.headers.values()) {
      if (!holdsNodes(record.state)) continue;
      const sent = record.current >= 0 ? record.waves[record.current] : undefined;
      holding.set(record.id, {
        state: record.state,
        current: sent ? (sent.kept as Kept).cut : -1,
        notSent: notSentCount(record),
        some: (record.unsentNames ?? []).slice(0, 10),
      });
    }
    return holding;
  }

  async list(): Promise<RolloutPage> {
    return { rollouts: [...this.headers.values()].map(summaryOf) };
  }

  async running(): Promise<string[]> {
    return [...this.headers.values()].filter(isDriven).map((r) => r.id);
  }
}
