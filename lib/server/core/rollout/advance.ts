import { type HealthState, unhealthyStep } from '../health.ts';
import { finished } from './claims.ts';
import {
  failuresOf,
  firstFailures,
  type NodeOutcome,
  type RolloutRecord,
  sizeOf,
  type Wave,
} from './record.ts';
import { failuresBorne, shareText } from './waves.ts';

/**
 * What the control plane knows of one node: its last report, whether its host is connected, its
 * health; and, for a node found unhealthy outside the wave in flight, which rollout holds it.
 */
export type NodeFacts = {
  readonly report?: {
    readonly revision: number;
    readonly state: 'applying' | 'applied' | 'failed';
    readonly step?: string | undefined;
  };
  /** false when the node's presence says offline; undefined when nothing is known. */
  readonly online?: boolean;
  /** false when the node has no completed enrolment: no host can answer for it. */
  readonly enrolled?: boolean;
  /** Its host's last report of its health (lib/server/core/health.ts); absent from hosts before health. */
  readonly health?: {
    readonly state: HealthState;
    readonly check: boolean;
    /** The revision its host had applied when it judged. */
    readonly revision: number;
    readonly reason?: string | undefined;
    /** While unhealthy: since when, by the control plane's clock. */
    readonly unhealthySince?: string | undefined;
  };
  /** The rollout whose claim holds it, and the wave it was cut into: for a node found on the unhealthy list. */
  readonly heldBy?: { readonly rollout: string; readonly wave: number };
};

export type Facts = ReadonlyMap<string, NodeFacts>;

/**
 * What the driver does next. send: push the wave's nodes (`wave` is its index), then record it
 * with waveSent; wait: ask again no later than `until`; halted, paused, done: the record says so
 * now, write it; idle: nothing to do (the rollout is not running); unread: the next wave is to
 * be sent but was read without its nodes (read it, and decide again). The steps before the first
 * wave and after a refusal (service.ts) say what they did: claiming (so many claimed, more to
 * come), claimed (all, the first wave next), superseded (a halted upgrade aborted, its nodes
 * claimable), refused (another rollout holds some), releasing (claims let go so far).
 */
export type Decision =
  | { readonly kind: 'send'; readonly wave: number; readonly nodes: readonly string[] }
  | { readonly kind: 'wait'; readonly until: string }
  | { readonly kind: 'halted'; readonly reason: string }
  | { readonly kind: 'paused'; readonly reason: string }
  | { readonly kind: 'done' }
  | { readonly kind: 'idle' }
  | { readonly kind: 'unread'; readonly wave: number }
  | { readonly kind: 'claiming'; readonly claimed: number; readonly total: number }
  | { readonly kind: 'claimed'; readonly total: number }
  | { readonly kind: 'superseded'; readonly rollout: string }
  | { readonly kind: 'refused'; readonly reason: string }
  | { readonly kind: 'releasing'; readonly released: number; readonly upto: number }
  | { readonly kind: 'undoing'; readonly rollout: string };

export type Advanced = { readonly record: RolloutRecord; readonly decision: Decision };

/**
 * One step of a rollout, decided from its record and the facts about the wave in flight. Pure
 * and idempotent: asked twice with the same facts it answers the same, so a driver that dies
 * between deciding and writing only decides again. A wave ends when each of its nodes applied
 * the revision it was sent (or a later one), healthy when its host has a check, or failed; when
 * its time runs out first, the nodes that never answered count as failures. A node of the
 * rollout that turns unhealthy after it applied, in this wave or one before, is a failure too. Failures are counted over the whole rollout, since the
 * bound is what the operator bears in all.
 */
export function advance(record: RolloutRecord, facts: Facts, now: Date): Advanced {
  if (record.state !== 'running') return { record, decision: { kind: 'idle' } };
  const at = now.toISOString();
  if (record.current < 0) return sendNext(record);
  const wave = record.waves[record.current];
  // a wave that ended before a pause is over: a resume goes on to the next
  if (!wave?.sentAt || wave.endedAt) return sendNext(record);
  if (!wave.nodes) throw new Error(`rollout ${record.id}: wave ${record.current + 1} read without its nodes`);

  let nodes = wave.nodes.map((n) => judged(n, facts.get(n.node)));
  let current = withTurnedUnhealthy(withWave(record, { ...wave, nodes }), facts);
  if (typeof current === 'string') return halt(withWave(record, { ...wave, nodes }), at, current);
  const over = overBound(current);
  if (over) return halt(current, at, over);

  const deadline = Date.parse(wave.sentAt) + record.options.waveTimeoutSeconds * 1000;
  const open = nodes.filter(unanswered);
  if (open.length > 0 && now.getTime() < deadline)
    return {
      record: changed(record, current, at),
      decision: { kind: 'wait', until: new Date(deadline).toISOString() },
    };
  if (open.length > 0) {
    nodes = nodes.map((n) =>
      unanswered(n) ? { ...n, state: 'timed-out', step: n.state === 'offline' ? 'offline' : 'no answer' } : n,
    );
    current = withWave(record, { ...wave, nodes });
    const late = overBound(current, `wave ${record.current + 1} timed out`);
    if (late) return halt(current, at, late);
  }
  current = withWave(current, { ...wave, nodes, endedAt: at });
  if (record.current === record.waves.length - 1)
    return { record: finished(current, at), decision: { kind: 'done' } };
  if (record.options.pause) {
    const reason = `paused after wave ${record.current + 1}: mesh rollout resume ${record.id}`;
    return {
      record: { ...current, state: 'paused', reason, updatedAt: at },
      decision: { kind: 'paused', reason },
    };
  }
  return sendNext({ ...current, updatedAt: at });
}

const unanswered = (n: NodeOutcome) => n.state === 'waiting' || n.state === 'offline';

/**
 * A node's outcome from its facts: only a report of its revision (or later) answers. Applied
 * answers when its host has no check (or reports no health), or when the check's verdict on that
 * revision is healthy; unhealthy is a failure; a verdict still to come waits. A node that applied
 * and then turned unhealthy fails too.
 */
function judged(n: NodeOutcome, facts: NodeFacts | undefined): NodeOutcome {
  if (n.revision === undefined) return n;
  const health = facts?.health;
  const verdict = health?.check && health.revision >= n.revision ? health.state : undefined;
  if (n.state === 'applied')
    return verdict === 'unhealthy' ? { ...base(n), state: 'failed', step: unhealthyStep(health?.reason) } : n;
  if (!unanswered(n)) return n;
  // sent what the wave released; it applies it when its host enrols, and is never waited on
  if (facts?.enrolled === false) return { ...base(n), state: 'skipped', step: 'never enrolled' };
  const report = facts?.report;
  if (report && report.revision >= n.revision && report.state !== 'applying') {
    if (report.state === 'failed') return { ...base(n), state: 'failed', step: report.step ?? 'failed' };
    if (!health?.check || verdict === 'healthy') return { ...base(n), state: 'applied' };
    if (verdict === 'unhealthy') return { ...base(n), state: 'failed', step: unhealthyStep(health.reason) };
  }
  return { ...base(n), state: facts?.online === false ? 'offline' : 'waiting' };
}

/** How many nodes of earlier waves that turned unhealthy a record keeps; one more halts it. */
export const maxTurnedUnhealthy = 100;

/**
 * The rollout's own nodes of waves that ended (by their claims) found unhealthy since their
 * wave ended: each counts once as a failure, kept in the record's header, since their waves'
 * nodes are not read by the step. Past `maxTurnedUnhealthy` the answer is why it halts.
 */
function withTurnedUnhealthy(record: RolloutRecord, facts: Facts): RolloutRecord | string {
  const counted = new Set((record.turnedUnhealthy ?? []).map((n) => n.node));
  const inFlight = new Set(record.waves[record.current]?.nodes?.map((n) => n.node));
  const found: NodeOutcome[] = [];
  for (const [node, fact] of facts) {
    const { heldBy, health } = fact;
    if (!heldBy || heldBy.rollout !== record.id || heldBy.wave >= record.current) continue;
    if (counted.has(node) || inFlight.has(node) || health?.state !== 'unhealthy') continue;
    const endedAt = record.waves[heldBy.wave]?.endedAt;
    if (!endedAt || !health.unhealthySince || health.unhealthySince <= endedAt) continue;
    found.push({ node, state: 'failed', step: unhealthyStep(health.reason) });
  }
  if (found.length === 0) return record;
  const turnedUnhealthy = [
    ...(record.turnedUnhealthy ?? []),
    ...found.sort((a, b) => (a.node < b.node ? -1 : 1)),
  ];
  if (turnedUnhealthy.length > maxTurnedUnhealthy)
    return `more than ${maxTurnedUnhealthy} nodes of waves already done turned unhealthy: ${found
      .slice(0, 5)
      .map((n) => `${n.node} ${n.step}`)
      .join('; ')}`;
  return { ...record, turnedUnhealthy };
}

const base = (n: NodeOutcome): NodeOutcome => ({
  node: n.node,
  state: n.state,
  ...(n.revision === undefined ? {} : { revision: n.revision }),
  ...(n.paired ? { paired: true } : {}),
});

const withWave = (record: RolloutRecord, wave: Wave): RolloutRecord => ({
  ...record,
  waves: record.waves.map((w, i) => (i === record.current ? wave : w)),
});

/** The record only when something in it changed, so a wait that learnt nothing writes nothing. */
const changed = (before: RolloutRecord, after: RolloutRecord, at: string): RolloutRecord =>
  JSON.stringify(before.waves) === JSON.stringify(after.waves) &&
  before.turnedUnhealthy === after.turnedUnhealthy
    ? before
    : { ...after, updatedAt: at };

/** Why the failures are past the bound, or undefined while they are within it. */
function overBound(record: RolloutRecord, when?: string): string | undefined {
  const total = sizeOf(record);
  const failures = failuresOf(record) - record.borne;
  const borne = failuresBorne(record.options.maxFailures, total);
  if (failures <= borne) return undefined;
  const failed = firstFailures(record).map(
    (n) => `${n.node} ${n.state === 'failed' ? `failed at ${n.step}` : `timed out (${n.step})`}`,
  );
  const bound = shareText(record.options.maxFailures);
  return `${when ? `${when}: ` : ''}${failures} failure${failures === 1 ? '' : 's'}, more than --max-failures ${bound} (${borne} of ${total} nodes): ${failed.join('; ')}`;
}

function halt(record: RolloutRecord, at: string, reason: string): Advanced {
  return {
    record: { ...record, state: 'halted', reason, updatedAt: at },
    decision: { kind: 'halted', reason },
  };
}

/**
 * The next wave's send. Its nodes are the record's when it was read with them; a step that read
 * only the wave in flight reads the next one (`unread`) and decides again, which decides the same.
 */
function sendNext(record: RolloutRecord): Advanced {
  const wave = record.current + 1;
  const next = record.waves[wave];
  if (!next) return { record: finished(record), decision: { kind: 'done' } };
  if (!next.nodes) return { record, decision: { kind: 'unread', wave } };
  return { record, decision: { kind: 'send', wave, nodes: next.nodes.map((n) => n.node) } };
}
