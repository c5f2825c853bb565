import type { AuditVerdict } from '../audit/ports.ts';
import type { ApplyJob } from '../mesh-file/apply-job.ts';
import type { PushRecord } from '../push/records.ts';
import type { Advanced } from '../rollout/advance.ts';
import { describeOrigin } from '../rollout/service.ts';
import type { PresenceEvent } from '../signal/presence.ts';

/**
 * What Mesh tells the operator's own tools (docs/events.md): a small, secret-free record of
 * something a person would want to hear, after the change it tells of committed. Its
 * `detail-type` is stable; its detail names things, never a secret, a token or a declaration.
 */
export const eventTypes = [
  'push.completed',
  'push.failed',
  'rollout.started',
  'rollout.paused',
  'rollout.halted',
  'rollout.done',
  'rollout.undone',
  'node.online',
  'node.offline',
  'node.unhealthy',
  'node.enrolled',
  'apply.completed',
  'apply.failed',
  'audit.unverified',
] as const;

export type EventType = (typeof eventTypes)[number];

/** The events a person has to act on: what the stack's `eventsEmail` rule mails (docs/events.md). */
export const eventsNeedingAttention: readonly EventType[] = [
  'push.failed',
  'rollout.halted',
  'node.offline',
  'node.unhealthy',
  'apply.failed',
  'audit.unverified',
];

export type MeshEvent = {
  readonly type: EventType;
  /** When it happened, ISO. */
  readonly time: string;
  readonly detail: Readonly<Record<string, string | number | boolean | null | readonly string[]>>;
};

/**
 * Where events go: EventBridge on AWS, a signed webhook locally, nowhere when neither is set.
 * Called after the change committed; never throws and never holds the change up for longer than
 * its own bound (a webhook is queued in memory; a PutEvents is one bounded call).
 */
export interface EventSink {
  publish(events: readonly MeshEvent[]): Promise<void>;
}

export const noEvents: EventSink = { publish: async () => undefined };

/** Hands events to the sink, whatever becomes of them: an event is never a reason a change fails. */
export async function tell(sink: EventSink | undefined, events: readonly MeshEvent[]): Promise<void> {
  if (!sink || events.length === 0) return;
  try {
    await sink.publish(events);
  } catch {
    // a sink that throws broke its own contract: the change it tells of stands all the same
  }
}

/** A push that ended: `push.completed` with its counts, or `push.failed` with what failed. */
export function pushEvent(record: PushRecord): MeshEvent {
  const common = {
    push: record.id,
    requestedBy: record.requestedBy,
    node: record.request.node,
  };
  if (record.outcome === 'failed')
    return {
      type: 'push.failed',
      time: record.finishedAt ?? record.startedAt,
      detail: { ...common, error: record.error },
    };
  return {
    type: 'push.completed',
    time: record.finishedAt ?? record.startedAt,
    detail: {
      ...common,
      pushed: record.pushed?.node ?? null,
      flushed: record.flushedCount,
      rounds: record.rounds,
      behind: record.behindCount,
      consistent: record.behindCount === 0,
    },
  };
}

/** What a rollout's step is worth telling: it started sending, paused, halted or finished. */
export function rolloutEvent({ record, decision }: Advanced, time: string): MeshEvent | undefined {
  const common = { rollout: record.id, what: describeOrigin(record.origin), waves: record.waves.length };
  switch (decision.kind) {
    case 'claimed':
      return { type: 'rollout.started', time, detail: { ...common, nodes: decision.total } };
    case 'paused':
      return {
        type: 'rollout.paused',
        time,
        detail: { ...common, wave: record.current + 1, reason: decision.reason },
      };
    case 'halted':
      return {
        type: 'rollout.halted',
        time,
        detail: { ...common, wave: record.current + 1, reason: decision.reason },
      };
    case 'done':
      // an undo's last wave applied: every node it changed is back to what it had before
      // an undo's last wave applied; an agent upgrade's set each host back to its own version,
      // so `agent` names the one taken back in place of a module and the version set back
      if (record.origin.kind === 'undo' || record.origin.kind === 'agent-undo') {
        const { origin } = record;
        return {
          type: 'rollout.undone',
          time,
          detail: {
            rollout: origin.rollout,
            undo: record.id,
            ...(origin.kind === 'undo'
              ? { module: origin.module, version: origin.version }
              : { agent: origin.version }),
            waves: record.waves.length,
          },
        };
      }
      return { type: 'rollout.done', time, detail: common };
    default:
      return undefined;
  }
}

/** A host's connection to the signal, once recorded. */
export const presenceEvent = (event: PresenceEvent): MeshEvent => ({
  type: event.state === 'connected' ? 'node.online' : 'node.offline',
  time: new Date(event.atMs).toISOString(),
  detail: { node: event.node },
});

/** A node's health turned unhealthy (its host's check failed), once the report saying so is recorded. */
export const unhealthyEvent = (node: string, revision: number, time: string): MeshEvent => ({
  type: 'node.unhealthy',
  time,
  detail: { node, revision },
});

/** A node's host enrolled: its token spent, its key the node's. */
export const enrolledEvent = (enrolled: {
  readonly node: string;
  readonly thumbprint: string;
  readonly enrolledAt: string;
}): MeshEvent => ({
  type: 'node.enrolled',
  time: enrolled.enrolledAt,
  detail: { node: enrolled.node, thumbprint: enrolled.thumbprint },
});

/** An apply job that ended: `apply.completed` with what it wrote, or `apply.failed` with why. */
export function applyJobEvent(job: ApplyJob): MeshEvent | undefined {
  const common = {
    job: job.id,
    requestedBy: job.by.principal,
    revision: job.plan.revision,
    prune: job.prune,
  };
  if (job.state === 'done')
    return {
      type: 'apply.completed',
      time: job.updatedAt,
      detail: {
        ...common,
        parts: job.parts,
        items: job.written.items,
        removedNodes: job.removed.nodes,
        removedRelations: job.removed.relations,
        removedModules: job.removed.modules,
      },
    };
  if (job.state === 'failed')
    return {
      type: 'apply.failed',
      time: job.updatedAt,
      detail: { ...common, code: job.error?.code ?? 'internal', message: job.error?.message ?? null },
    };
  return undefined;
}

/** How many chains named at most in an `audit.unverified` event. */
export const chainsNamed = 10;

/** An audit verify that found records which do not check: how many, of what kinds, on which chains. */
export function auditEvent(verdict: AuditVerdict, time: string): MeshEvent | undefined {
  if (verdict.findingCount === 0) return undefined;
  return {
    type: 'audit.unverified',
    time,
    detail: {
      chains: verdict.chains,
      records: verdict.records,
      findings: verdict.findingCount,
      problems: [...new Set(verdict.findings.map((finding) => finding.problem))].sort(),
      subjects: [...new Set(verdict.findings.map((finding) => finding.subject))].slice(0, chainsNamed),
    },
  };
}
