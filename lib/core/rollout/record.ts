import { RolloutStateError, RolloutTooLargeError } from './errors.ts';
import { cutWaves, type RolloutOptions } from './waves.ts';

/**
 * A rollout's record: the truth a driver advances (docs/decisions/rollouts-in-waves.md). It is
 * plain JSON, kept whole in one item, written only when its `version` is still the one read.
 */
export type RolloutOrigin =
  | { readonly kind: 'push'; readonly node: string }
  | { readonly kind: 'behind' }
  | { readonly kind: 'on'; readonly selector: string }
  | { readonly kind: 'upgrade'; readonly module: string; readonly version: string };

/**
 * pending: in a wave not sent yet; waiting: sent, no answer for its revision yet; offline:
 * waiting while its host is not connected; timed-out: no answer when the wave's time ran out.
 */
export type NodeState = 'pending' | 'waiting' | 'offline' | 'applied' | 'failed' | 'timed-out';

export type NodeOutcome = {
  readonly node: string;
  readonly state: NodeState;
  /** The revision the wave sent it (or found it at, when it was not behind). */
  readonly revision?: number;
  /** A failed node's last report step, or why it timed out (`offline`). */
  readonly step?: string;
  /** Not one of the rollout's own nodes: a provider its wave's sends pair with. */
  readonly paired?: true;
};

export type Wave = {
  readonly nodes: readonly NodeOutcome[];
  readonly sentAt?: string;
  readonly endedAt?: string;
};

export type RolloutState = 'running' | 'paused' | 'halted' | 'aborted' | 'done';

export type RolloutRecord = {
  readonly id: string;
  readonly origin: RolloutOrigin;
  readonly options: RolloutOptions;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly state: RolloutState;
  /** Why it halted, paused or was aborted. */
  readonly reason?: string;
  readonly waves: readonly Wave[];
  /** The last wave recorded as sent; -1 before the first. */
  readonly current: number;
  /** Failures a resume after a halt accepted: the bound counts only those after them. */
  readonly borne: number;
  /** Bumped by every write; a write holds only if the record is still at the version read. */
  readonly version: number;
};

/** One record holds its rollout whole (one item, 400 KB): enough for the fleets a wave is cut from. */
export const maxRolloutNodes = 5_000;

export function newRollout(options: {
  readonly id: string;
  readonly origin: RolloutOrigin;
  readonly nodes: readonly string[];
  readonly rollout: RolloutOptions;
  readonly now: string;
}): RolloutRecord {
  const nodes = [...new Set(options.nodes)];
  if (nodes.length > maxRolloutNodes)
    throw new RolloutTooLargeError(`${nodes.length} nodes: one rollout takes at most ${maxRolloutNodes}`);
  return {
    id: options.id,
    origin: options.origin,
    options: options.rollout,
    createdAt: options.now,
    updatedAt: options.now,
    state: 'running',
    waves: cutWaves(nodes, options.rollout.waves).map((wave) => ({
      nodes: wave.map((node) => ({ node, state: 'pending' as const })),
    })),
    current: -1,
    borne: 0,
    version: 0,
  };
}

/** What a wave's push did to one node: its revision now, whether it was one of the wave's own. */
export type WaveSend = { readonly node: string; readonly revision: number };

/**
 * The wave as sent: every node it sent or checked is waiting for its revision, and the providers
 * the sends paired with join it, moved out of a later wave or added as paired (never left for a
 * later wave: a consumer would hold a provision its provider was not sent).
 */
export function waveSent(
  record: RolloutRecord,
  wave: number,
  sends: readonly WaveSend[],
  now: string,
): RolloutRecord {
  const revisions = new Map(sends.map((send) => [send.node, send.revision]));
  const own = new Set(record.waves[wave]?.nodes.map((n) => n.node));
  const moved = new Set<string>();
  const waves = record.waves.map((later, index) => {
    if (index <= wave) return later;
    const kept = later.nodes.filter((n) => !revisions.has(n.node));
    for (const n of later.nodes) if (revisions.has(n.node)) moved.add(n.node);
    return { ...later, nodes: kept };
  });
  const earlier = new Set(record.waves.slice(0, wave).flatMap((w) => w.nodes.map((n) => n.node)));
  const joined = [...revisions.keys()].filter((node) => !own.has(node) && !earlier.has(node)).sort();
  const nodes: NodeOutcome[] = [
    ...(record.waves[wave]?.nodes ?? []).map((n) => waiting(n, revisions.get(n.node))),
    ...joined.map((node) => ({
      ...waiting({ node, state: 'pending' }, revisions.get(node)),
      ...(moved.has(node) ? {} : { paired: true as const }),
    })),
  ];
  waves[wave] = { nodes, sentAt: now };
  return {
    ...record,
    waves: waves.filter((w, i) => i <= wave || w.nodes.length > 0),
    current: wave,
    updatedAt: now,
  };
}

/** A node the wave's push found gone (removed meanwhile) keeps no revision and is never waited on. */
const waiting = (n: NodeOutcome, revision: number | undefined): NodeOutcome =>
  revision === undefined
    ? {
        node: n.node,
        state: 'failed',
        step: 'not sent (node removed)',
        ...(n.paired ? { paired: true } : {}),
      }
    : { node: n.node, state: 'waiting', revision, ...(n.paired ? { paired: true } : {}) };

/** `mesh rollout resume`: a paused rollout goes on; a halted one goes on bearing the failures it halted on. */
export function resumed(record: RolloutRecord, now: string): RolloutRecord {
  if (record.state !== 'paused' && record.state !== 'halted')
    throw new RolloutStateError(record.id, record.state, 'resumed');
  const { reason: _reason, ...rest } = record;
  return { ...rest, state: 'running', borne: failuresOf(record), updatedAt: now };
}

/** `mesh rollout abort`: nothing more is sent; the nodes not sent stay behind. */
export function aborted(
  record: RolloutRecord,
  now: string,
  reason = 'aborted by an operator',
): RolloutRecord {
  if (record.state === 'done' || record.state === 'aborted')
    throw new RolloutStateError(record.id, record.state, 'aborted');
  return { ...record, state: 'aborted', reason, updatedAt: now };
}

export const allNodes = (record: RolloutRecord) => record.waves.flatMap((w) => w.nodes);

/** Failed and timed-out nodes in every wave sent. */
export const failuresOf = (record: RolloutRecord) =>
  allNodes(record).filter((n) => n.state === 'failed' || n.state === 'timed-out').length;

/** The nodes no wave has sent yet: behind, left for a resume or another push. */
export const notSent = (record: RolloutRecord) =>
  record.waves.slice(record.current + 1).flatMap((w) => w.nodes.map((n) => n.node));

export const isFinished = (record: RolloutRecord) =>
  record.state === 'done' || record.state === 'aborted' || record.state === 'halted';
