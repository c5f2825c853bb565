import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AuditVerdict } from '../../lib/server/core/audit/ports.ts';
import {
  AnnouncingApplyJobs,
  AnnouncingAuditReader,
  AnnouncingReports,
} from '../../lib/server/core/events/announcing.ts';
import {
  applyJobEvent,
  type EventSink,
  eventTypes,
  type MeshEvent,
  presenceEvent,
  rolloutEvent,
} from '../../lib/server/core/events/events.ts';
import { type ApplyJob, failedJob, openedJob } from '../../lib/server/core/mesh-file/apply-job.ts';
import type { Advanced } from '../../lib/server/core/rollout/advance.ts';
import { InMemoryControlStore } from '../support/control-fakes.ts';
import { MemoryApplyJobs } from '../support/memory-apply-jobs.ts';

const record = {
  id: '20261206T000000000Z-abcdef',
  origin: { kind: 'upgrade', module: 'nginx', version: '2.0', from: '1.0' },
  current: 1,
  waves: [{}, {}, {}],
} as unknown as Advanced['record'];

describe('the events a step of a rollout is worth', () => {
  it('tells started, paused, halted and done, with the wave and reason, and nothing for a wait or a send', () => {
    const at = '2026-12-06T00:00:00.000Z';
    expect(
      rolloutEvent({ record, decision: { kind: 'halted', reason: '2 failed, more than 0' } }, at),
    ).toEqual({
      type: 'rollout.halted',
      time: at,
      detail: {
        rollout: record.id,
        what: expect.stringContaining('nginx'),
        waves: 3,
        wave: 2,
        reason: '2 failed, more than 0',
      },
    });
    expect(rolloutEvent({ record, decision: { kind: 'claimed', total: 40 } }, at)?.type).toBe(
      'rollout.started',
    );
    expect(rolloutEvent({ record, decision: { kind: 'done' } }, at)?.type).toBe('rollout.done');
    expect(rolloutEvent({ record, decision: { kind: 'wait', until: at } }, at)).toBeUndefined();
    expect(rolloutEvent({ record, decision: { kind: 'send', wave: 1, nodes: ['a'] } }, at)).toBeUndefined();
    expect(presenceEvent({ node: 'web1', state: 'disconnected', atMs: 0, version: 1 }).type).toBe(
      'node.offline',
    );
  });

  it('lists every type in docs/events.md', () => {
    const page = readFileSync(join(import.meta.dirname, '../../docs/events.md'), 'utf8');
    const listed = [...page.matchAll(/^\| `([a-z]+\.[a-z]+)` \|/gm)].map((match) => match[1]);
    expect(listed).toEqual([...eventTypes]);
  });
});

/** A sink that keeps what it is told. */
class RecordingSink implements EventSink {
  readonly told: MeshEvent[] = [];
  async publish(events: readonly MeshEvent[]) {
    this.told.push(...events);
  }
}

const by = { principal: 'arn:aws:iam::123456789012:user/ops', source: '203.0.113.9', requestId: 'r1' };

describe('the events told where their change commits', () => {
  it('tells rollout.undone, not rollout.done, when an undo’s last wave applied', () => {
    const undo = {
      ...record,
      id: '20261206T010000000Z-undo01',
      origin: { kind: 'undo', rollout: record.id, module: 'nginx', version: '1.0' },
    } as unknown as Advanced['record'];
    const at = '2026-12-06T01:00:00.000Z';
    expect(rolloutEvent({ record: undo, decision: { kind: 'done' } }, at)).toEqual({
      type: 'rollout.undone',
      time: at,
      detail: { rollout: record.id, undo: undo.id, module: 'nginx', version: '1.0', waves: 3 },
    });
    const agentUndo = {
      ...undo,
      origin: { kind: 'agent-undo', rollout: record.id, version: '2.0.0' },
    } as unknown as Advanced['record'];
    expect(rolloutEvent({ record: agentUndo, decision: { kind: 'done' } }, at)).toEqual({
      type: 'rollout.undone',
      time: at,
      detail: { rollout: record.id, undo: undo.id, agent: '2.0.0', waves: 3 },
    });
  });

  it('tells node.unhealthy once the report that turned the node unhealthy is recorded, and not when it is refused', async () => {
    const store = new InMemoryControlStore();
    const sink = new RecordingSink();
    const reports = new AnnouncingReports(store.reportStore, sink);
    const times = (second: number) => ({
      heardAt: `2026-12-06T01:00:0${second}.000Z`,
      queuedAt: `2026-12-06T01:00:0${second}.000Z`,
    });
    const health = (state: 'healthy' | 'unhealthy') => ({ state, check: true, revision: 3 });
    const report = (sequence: number, state: 'healthy' | 'unhealthy') => ({
      node: 'db-1',
      sequence,
      sentAt: '2026-12-06T01:00:00.000Z',
      state: 'applied' as const,
      revision: 3,
      health: health(state),
    });
    await reports.recordReport(report(1, 'healthy'), times(1));
    await reports.recordReport(report(2, 'unhealthy'), times(2));
    await reports.recordReport(report(3, 'unhealthy'), times(3));
    await expect(reports.recordReport(report(3, 'unhealthy'), times(4))).rejects.toThrow();
    expect(sink.told).toEqual([
      { type: 'node.unhealthy', time: times(2).heardAt, detail: { node: 'db-1', revision: 3 } },
    ]);
  });

  it('tells apply.completed or apply.failed once the record that ends the job is written, and nothing for a part or a refused record', async () => {
    const jobs = new MemoryApplyJobs();
    const sink = new RecordingSink();
    const announcing = new AnnouncingApplyJobs(jobs, sink);
    const now = new Date('2026-12-06T01:00:00.000Z');
    const plan = { revision: 'r7', digest: 'd', counts: {} };
    const opened = openedJob(
      '20261206T010000000Z-abc123',
      { by },
      plan,
      { remaining: {}, remainingNodes: 0 } as never,
      now,
      now,
    );
    await announcing.start(opened, 'nodes: {}');
    const part = { ...opened, parts: 1, heldUntil: undefined } as ApplyJob;
    await announcing.record(part, 0);
    const done: ApplyJob = { ...part, parts: 2, state: 'done', written: { transactions: 4, items: 40 } };
    await expect(announcing.record(done, 0)).rejects.toThrow();
    await announcing.record(done, 1);
    expect(sink.told).toEqual([
      {
        type: 'apply.completed',
        time: done.updatedAt,
        detail: {
          job: opened.id,
          requestedBy: by.principal,
          revision: 'r7',
          prune: false,
          parts: 2,
          items: 40,
          removedNodes: 0,
          removedRelations: 0,
          removedModules: 0,
        },
      },
    ]);
    const failed = failedJob(part, { status: 409, code: 'stale_plan', message: 'the mesh changed' }, now);
    expect(applyJobEvent(failed)).toMatchObject({
      type: 'apply.failed',
      detail: { job: opened.id, code: 'stale_plan', message: 'the mesh changed' },
    });
  });

  it('tells audit.unverified when a verify finds records that do not check, naming the chains, and nothing when intact', async () => {
    const sink = new RecordingSink();
    let verdict: AuditVerdict = { chains: 3, records: 9, findings: [], findingCount: 0 };
    const reader = new AnnouncingAuditReader(
      { page: async () => ({ records: [] }), verify: async () => verdict },
      sink,
      () => new Date('2026-12-06T01:00:00.000Z'),
    );
    await reader.verify();
    expect(sink.told).toEqual([]);
    verdict = {
      ...verdict,
      findings: [
        { subject: 'node:alpha', seq: 2, problem: 'altered', says: '…' },
        { subject: 'node:beta', seq: 1, problem: 'removed', says: '…' },
      ],
      findingCount: 2,
    };
    await reader.verify();
    expect(sink.told).toEqual([
      {
        type: 'audit.unverified',
        time: '2026-12-06T01:00:00.000Z',
        detail: {
          chains: 3,
          records: 9,
          findings: 2,
          problems: ['altered', 'removed'],
          subjects: ['node:alpha', 'node:beta'],
        },
      },
    ]);
  });
});
