import type { HoldingState } from '../hold/held-back.ts';
import type { ClaimProgress, Refusal } from './claims.ts';
import { RolloutStateError, RolloutTooLargeError } from './errors.ts';
import { cutWaves, type RolloutOptions } from './waves.ts';

/**
 * A rollout's record: the truth a driver advances (docs/decisions/rollouts-in-waves.md). It is
 * plain JSON, written only when its `version` is still the one read. A step holds the nodes of
 * the waves it works on (`nodes`); every other wave is known by its tally alone, so a step costs
 * its waves, never the whole rollout.
 */
export type RolloutOrigin =
  | { readonly kind: 'push'; readonly node: string }
  | { readonly kind: 'behind' }
  | { readonly kind: 'on'; readonly selector: string }
  | {
      readonly kind: 'upgrade';
      readonly module: string;
      readonly version: string;
      /** The module's version before the upgrade (null: none): what an undo sets back. Absent on older records. */
      readonly from?: string | null;
    }
  /**
   * `mesh agent upgrade VERSION`: each wave sets the agent version on its nodes, then sends them;
   * a host reports the revision applied once it runs that version, failed when it refused or
   * rolled the release back.
   */
  | { readonly kind: 'agent'; readonly version: string }
  /** `mesh rollout undo`: an upgrade's version set back, sent to the nodes it changed in its waves. */
  | { readonly kind: 'undo'; readonly rollout: string; readonly module: string; readonly version: string }
  /**
   * `mesh rollout undo` of an agent upgrade: each node it changed set back to the version its host
   * ran before (core/mesh/agent-before.ts), a wave at a time in its waves; `version` is the one
   * taken back.
   */
  | { readonly kind: 'agent-undo'; readonly rollout: string; readonly version: string };

/**
 * pending: in a wave not sent yet; waiting: sent, no answer for its revision yet; offline:
 * waiting while its host is not connected; timed-out: no answer when the wave's time ran out;
 * held: its wave could not send it, a freeze (or another rollout) holding it back or a relation
 * of its own waiting with a held-back node, so it is sent what the wave released once that
 * lifts (docs/decisions/held-back.md); skipped: its host never enrolled, so nobody can answer
 * for it: it is sent what its wave released when it enrols. Neither is waited on or a failure.
 */
export type NodeState =
  | 'pending'
  | 'waiting'
  | 'offline'
  | 'applied'
  | 'failed'
  | 'timed-out'
  | 'held'
  | 'skipped';

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

/** A wave without its nodes: how many, in which states, and its first failures (a halt names them). */
export type WaveTally = {
  readonly size: number;
  readonly counts: Readonly<Partial<Record<NodeState, number>>>;
  readonly failed: readonly NodeOutcome[];
};

export type Wave = {
  /** Its nodes, when the record was read with them; absent, the tally says what they are. */
  readonly nodes?: readonly NodeOutcome[];
  /** Kept beside the nodes by whoever wrote them; what a wave read without its nodes is known by. */
  readonly tally?: WaveTally;
  readonly sentAt?: string;
  readonly endedAt?: string;
  /** Where the store keeps the nodes: its own, carried through unchanged by the core. */
  readonly kept?: unknown;
};

/**
 * claiming: recorded, its nodes being claimed by the driver a step at a time (no wave sent);
 * refused: claiming met nodes another rollout holds, so it ends without sending anything.
 */
export type RolloutState =
  | HoldingState
  | 'aborted'
  | 'done'
  | 'refused'
  /** Taken back by an undo rollout (`undoneBy`), which took over the nodes it changed. */
  | 'undone';

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
  /** The claims of its own nodes, made by the driver before the first wave (absent: claimed at the start). */
  readonly claims?: ClaimProgress;
  /** A refused rollout's reason, as the 409 a start used to answer says it. */
  readonly refusal?: Refusal;
  /**
   * Claims an ended rollout lets go of a step at a time, from its `released`-th own node to
   * before the `upto`-th: the driver keeps stepping it until `released` reaches `upto`.
   */
  readonly releasing?: { readonly released: number; readonly upto: number };
  /**
   * The first of its own nodes no wave has sent yet, by name (at most `namedHeld`): what every
   * push names as held back by it, without reading its waves (docs/decisions/held-back.md).
   */
  readonly unsentNames?: readonly string[];
  /**
   * The rollout taking it back (`mesh rollout undo`, `--auto-undo`): asked for, its claims on the
   * nodes this one changed are taken over by it; this one is `undone` once it holds them all.
   */
  readonly undoneBy?: string;
  /**
   * An agent upgrade's versions its sent nodes ran before (at most `versionsBeforeLimit`): what
   * its undo sets back, checked as published before the undo is taken.
   */
  readonly versionsBefore?: readonly string[];
  /**
   * Its own nodes of waves that ended that turned unhealthy since (advance.ts): each a failure,
   * counted here once, as their waves' nodes are not read again.
   */
  readonly turnedUnhealthy?: readonly NodeOutcome[];
  /** Bumped by every write; a write holds only if the record is still at the version read. */
  readonly version: number;
};

/**
 * The most nodes one rollout takes. Its nodes are kept a wave (and a part) at a time and claimed
 * by the driver a step at a time, so the bound is neither an item's size nor a request's time but
 * a wave's push and the header's list of parts (about 230 at this bound).
 */
export const maxRolloutNodes = 50_000;

/** How many distinct versions before an agent upgrade's record keeps (a fleet runs a few at once). */
export const versionsBeforeLimit = 20;

/** The record with these versions before added to those it keeps, at most versionsBeforeLimit. */
export function withVersionsBefore(record: RolloutRecord, found: readonly string[]): RolloutRecord {
  const kept = new Set(record.versionsBefore ?? []);
  for (const version of found) if (kept.size < versionsBeforeLimit) kept.add(version);
  if (kept.size === (record.versionsBefore?.length ?? 0)) return record;
  return { ...record, versionsBefore: [...kept].sort() };
}

/** How many failures a halt's reason names. */
const namedFailures = 5;
/** How many of its unsent nodes a record names. */
const namedHeld = 50;

export function newRollout(options: {
  readonly id: string;
  readonly origin: RolloutOrigin;
  readonly nodes: readonly string[];
  readonly rollout: RolloutOptions;
  readonly now: string;
  /** The waves as given (an undo takes its rollout's), instead of cut from the options' sizes. */
  readonly waves?: readonly (readonly string[])[];
}): RolloutRecord {
  const nodes = [...new Set(options.waves ? options.waves.flat() : options.nodes)];
  if (nodes.length > maxRolloutNodes)
    throw new RolloutTooLargeError(`${nodes.length} nodes: one rollout takes at most ${maxRolloutNodes}`);
  return {
    id: options.id,
    origin: options.origin,
    options: options.rollout,
    createdAt: options.now,
    updatedAt: options.now,
    state: 'running',
    waves: (options.waves ? distinctWaves(options.waves) : cutWaves(nodes, options.rollout.waves)).map(
      (wave) => ({
        nodes: wave.map((node) => ({ node, state: 'pending' as const })),
      }),
    ),
    current: -1,
    borne: 0,
    unsentNames: nodes.slice(0, namedHeld),
    version: 0,
  };
}

/** Waves as given, each node in the first that names it, empty waves dropped. */
function distinctWaves(waves: readonly (readonly string[])[]): string[][] {
  const seen = new Set<string>();
  return waves
    .map((wave) => wave.filter((node) => !seen.has(node) && seen.add(node)))
    .filter((wave) => wave.length > 0);
}

/** A wave's tally: from its nodes when it holds them, else the one kept. */
export function tallyOf(wave: Wave): WaveTally {
  if (wave.nodes) return tallied(wave.nodes);
  if (wave.tally) return wave.tally;
  throw new Error('a wave with neither its nodes nor its tally');
}

export function tallied(nodes: readonly NodeOutcome[]): WaveTally {
  const counts: Partial<Record<NodeState, number>> = {};
  for (const n of nodes) counts[n.state] = (counts[n.state] ?? 0) + 1;
  const failed = nodes.filter(isFailure).slice(0, namedFailures);
  return { size: nodes.length, counts, failed };
}

const isFailure = (n: NodeOutcome) => n.state === 'failed' || n.state === 'timed-out';

/**
 * What a wave's push did to one node: its revision now; or, for a node the push left alone, who
 * holds it back (`heldBy`, as a push's `heldBack` names it, with the node it waits for if any).
 */
export type WaveSend =
  | { readonly node: string; readonly revision: number }
  | { readonly node: string; readonly heldBy: string; readonly waitsFor?: string | undefined };

/**
 * The wave as sent: every node it sent or checked is waiting for its revision, and the providers
 * the sends paired with join it, moved out of a later wave or added as paired (never left for a
 * later wave: a consumer would hold a provision its provider was not sent). `held` says which
 * wave holds each of the rollout's own nodes the sends name outside this wave (the store's
 * claims); a later wave it names must be read with its nodes. A node held by a later wave but no
 * longer in it was moved into an earlier one by an earlier send: it is not joined twice.
 */
export function waveSent(
  record: RolloutRecord,
  wave: number,
  sends: readonly WaveSend[],
  now: string,
  held: ReadonlyMap<string, number> = heldIn(record),
): RolloutRecord {
  const revisions = new Map(sends.map((send) => [send.node, 'revision' in send ? send.revision : 0]));
  const heldBack = new Map(
    sends.flatMap((send) => ('heldBy' in send ? [[send.node, heldText(send)] as const] : [])),
  );
  const own = new Set(record.waves[wave]?.nodes?.map((n) => n.node));
  const moved = new Set<string>();
  const waves = record.waves.map((later, index) => {
    if (index <= wave || !later.nodes?.some((n) => revisions.has(n.node))) return later;
    for (const n of later.nodes) if (revisions.has(n.node)) moved.add(n.node);
    const { tally: _tally, ...rest } = later;
    return { ...rest, nodes: later.nodes.filter((n) => !revisions.has(n.node)) };
  });
  const joined = [...revisions.keys()]
    .filter((node) => !own.has(node) && (moved.has(node) || !held.has(node)))
    .sort();
  const outcome = (n: NodeOutcome): NodeOutcome => {
    const by = heldBack.get(n.node);
    if (by === undefined) return waiting(n, revisions.get(n.node));
    return { node: n.node, state: 'held', step: by, ...(n.paired ? { paired: true } : {}) };
  };
  const nodes: NodeOutcome[] = [
    ...(record.waves[wave]?.nodes ?? []).map(outcome),
    ...joined.map((node) =>
      outcome({ node, state: 'pending', ...(moved.has(node) ? {} : { paired: true as const }) }),
    ),
  ];
  waves[wave] = {
    nodes,
    sentAt: now,
    ...(record.waves[wave]?.kept ? { kept: record.waves[wave]?.kept } : {}),
  };
  const sentNow = new Set([...revisions.keys(), ...(record.waves[wave]?.nodes ?? []).map((n) => n.node)]);
  return {
    ...record,
    waves: waves.filter((w, i) => i <= wave || tallyOf(w).size > 0),
    current: wave,
    ...(record.unsentNames ? { unsentNames: record.unsentNames.filter((node) => !sentNow.has(node)) } : {}),
    updatedAt: now,
  };
}

/** How a held node's step reads: `held back by freeze role=db`, `waits for broker (held back by rollout R)`. */
const heldText = (send: { readonly heldBy: string; readonly waitsFor?: string | undefined }) => {
  const by = send.heldBy.replace(':', ' ').replace(/^freeze all$/, 'freeze --all');
  return send.waitsFor ? `waits for ${send.waitsFor} (held back by ${by})` : `held back by ${by}`;
};

/** Which wave holds each node, from a record read whole (its waves' nodes all present). */
function heldIn(record: RolloutRecord): Map<string, number> {
  const held = new Map<string, number>();
  record.waves.forEach((w, index) => {
    for (const n of w.nodes ?? []) held.set(n.node, index);
  });
  return held;
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

/** The nodes of the waves the record holds with their nodes. */
export const allNodes = (record: RolloutRecord) => record.waves.flatMap((w) => w.nodes ?? []);

/** Every node of every wave, by state. */
export function countsOf(record: RolloutRecord): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const w of record.waves)
    for (const [state, count] of Object.entries(tallyOf(w).counts))
      counts[state] = (counts[state] ?? 0) + count;
  return counts;
}

export const sizeOf = (record: RolloutRecord) => record.waves.reduce((sum, w) => sum + tallyOf(w).size, 0);

/** Failed and timed-out nodes in every wave sent, and those of waves done that turned unhealthy. */
export const failuresOf = (record: RolloutRecord) => {
  const counts = countsOf(record);
  return (counts.failed ?? 0) + (counts['timed-out'] ?? 0) + (record.turnedUnhealthy?.length ?? 0);
};

/** The first failures of the whole rollout, wave after wave, then those that turned unhealthy: what a halt names. */
export const firstFailures = (record: RolloutRecord) =>
  [...record.waves.flatMap((w) => tallyOf(w).failed), ...(record.turnedUnhealthy ?? [])].slice(
    0,
    namedFailures,
  );

/** The nodes no wave has sent yet (of the waves held with their nodes): behind, left for a resume or another push. */
export const notSent = (record: RolloutRecord) =>
  record.waves.slice(record.current + 1).flatMap((w) => (w.nodes ?? []).map((n) => n.node));

/** How many nodes no wave has sent yet. */
export const notSentCount = (record: RolloutRecord) =>
  record.waves.slice(record.current + 1).reduce((sum, w) => sum + tallyOf(w).size, 0);

export const isFinished = (record: RolloutRecord) =>
  record.state === 'done' ||
  record.state === 'aborted' ||
  record.state === 'halted' ||
  record.state === 'refused' ||
  record.state === 'undone';

/** Holds its nodes: a rollout claiming them, that may still send (running, paused) or be resumed (halted). */
export const holdsNodes = (state: RolloutState): state is HoldingState =>
  state === 'claiming' || state === 'running' || state === 'paused' || state === 'halted';
