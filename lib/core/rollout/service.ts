import { randomBytes } from 'node:crypto';
import { NodeNotFoundError } from '../mesh/errors.ts';
import type { PushOutcome } from '../ports.ts';
import { type Advanced, advance } from './advance.ts';
import { EmptyRolloutError, RolloutNotFoundError } from './errors.ts';
import type { RolloutFacts, RolloutStore, RolloutSummary } from './ports.ts';
import {
  aborted,
  allNodes,
  newRollout,
  type RolloutOrigin,
  type RolloutRecord,
  resumed,
  type WaveSend,
  waveSent,
} from './record.ts';
import type { RolloutOptions } from './waves.ts';

export type RolloutDeps = {
  readonly store: RolloutStore;
  readonly facts: RolloutFacts;
  /** One wave's push: its nodes, then what they pair with (lib/core/mesh/push-steps.ts, `nodes`). */
  readonly wave: (nodes: readonly string[]) => Promise<PushOutcome>;
  /** The nodes behind now, for a rollout of `push --behind` or of a named node's flush. */
  readonly behind: () => Promise<string[]>;
  /** Whether a node exists: a named push's node must (NodeNotFoundError), as `POST /push` says. */
  readonly exists: (node: string) => Promise<boolean>;
  readonly now: () => Date;
};

/** `20260722T101500123Z-4f2a9c`, as a push's id: the start time, then six random hex digits; ids sort by time. */
export const newRolloutId = (at: Date) =>
  `${at.toISOString().replace(/[-:.]/g, '')}-${randomBytes(3).toString('hex')}`;
export const rolloutIdPattern = /^\d{8}T\d{9}Z-[0-9a-f]{6}$/;

/**
 * Rollouts as a job with a record (docs/decisions/rollouts-in-waves.md). `step` is the one way a
 * rollout moves: read the record, learn the facts of its wave in flight, decide (advance.ts),
 * send the next wave if that is the decision, write the record if it is still the one read. A
 * step that dies anywhere is taken again by the next: a wave sent twice sends nothing new.
 */
export class Rollouts {
  readonly #deps: RolloutDeps;

  constructor(deps: RolloutDeps) {
    this.#deps = deps;
  }

  /** Records a new rollout; the driver sends its first wave. The same id twice starts it once. */
  async start(input: {
    readonly id?: string;
    readonly origin: RolloutOrigin;
    /** The nodes of an `--on` or upgrade rollout; a push's are found behind. */
    readonly nodes?: readonly string[];
    readonly options: RolloutOptions;
  }): Promise<RolloutRecord> {
    const now = this.#deps.now();
    const nodes = await this.#nodesOf(input.origin, input.nodes ?? []);
    if (nodes.length === 0)
      throw new EmptyRolloutError(`nothing to roll out: ${describeOrigin(input.origin)} names no node`);
    const record = newRollout({
      id: input.id ?? newRolloutId(now),
      origin: input.origin,
      nodes,
      rollout: input.options,
      now: now.toISOString(),
    });
    if (await this.#deps.store.create(record)) return record;
    return (await this.#deps.store.read(record.id)) ?? record;
  }

  async #nodesOf(origin: RolloutOrigin, given: readonly string[]): Promise<string[]> {
    if (origin.kind === 'behind') return (await this.#deps.behind()).sort();
    if (origin.kind === 'push') {
      if (!(await this.#deps.exists(origin.node))) throw new NodeNotFoundError(origin.node);
      const others = (await this.#deps.behind()).filter((node) => node !== origin.node).sort();
      return [origin.node, ...others];
    }
    return [...given];
  }

  /** One move of the rollout; RolloutRaceError when another step wrote first (its move stands). */
  async step(id: string): Promise<Advanced> {
    const record = await this.read(id);
    const open = record.current < 0 ? [] : (record.waves[record.current]?.nodes ?? []);
    const waiting = open.filter((n) => n.state === 'waiting' || n.state === 'offline').map((n) => n.node);
    const facts = waiting.length > 0 ? await this.#deps.facts.of(waiting) : new Map();
    const now = this.#deps.now();
    const advanced = advance(record, facts, now);
    const { decision } = advanced;
    if (decision.kind !== 'send') {
      if (advanced.record === record) return advanced;
      return { record: await this.#deps.store.write(advanced.record), decision };
    }
    const outcome = await this.#deps.wave(decision.nodes);
    const sent = new Map(outcome.flushed.map((f) => [f.node, f.revision]));
    const unsent = decision.nodes.filter((node) => !sent.has(node));
    const found = unsent.length > 0 ? await this.#deps.facts.revisions(unsent) : new Map<string, number>();
    const sends: WaveSend[] = [
      ...[...sent].map(([node, revision]) => ({ node, revision })),
      ...[...found].map(([node, revision]) => ({ node, revision })),
    ];
    const next = waveSent(advanced.record, decision.wave, sends, this.#deps.now().toISOString());
    return { record: await this.#deps.store.write(next), decision };
  }

  async read(id: string): Promise<RolloutRecord> {
    const record = await this.#deps.store.read(id);
    if (!record) throw new RolloutNotFoundError(id);
    return record;
  }

  async resume(id: string): Promise<RolloutRecord> {
    return this.#deps.store.write(resumed(await this.read(id), this.#deps.now().toISOString()));
  }

  async abort(id: string): Promise<RolloutRecord> {
    return this.#deps.store.write(aborted(await this.read(id), this.#deps.now().toISOString()));
  }
}

export function describeOrigin(origin: RolloutOrigin): string {
  switch (origin.kind) {
    case 'push':
      return `push ${origin.node}`;
    case 'behind':
      return 'push --behind';
    case 'on':
      return `push --on ${origin.selector}`;
    case 'upgrade':
      return `upgrade ${origin.module} ${origin.version}`;
  }
}

/** A record as a list shows it. */
export function summaryOf(record: RolloutRecord): RolloutSummary {
  const counts: Record<string, number> = {};
  for (const n of allNodes(record)) counts[n.state] = (counts[n.state] ?? 0) + 1;
  return {
    id: record.id,
    origin: record.origin,
    state: record.state,
    ...(record.reason ? { reason: record.reason } : {}),
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
    waves: record.waves.length,
    wave: record.current + 1,
    counts,
  };
}
