import { describe, expect, it } from 'vitest';
import { InProcessPushStarter } from '../../lib/local/in-process-push-starter.ts';
import { LocalPushFlow } from '../../lib/local/local-push-flow.ts';
import { Pusher } from '../../lib/server/core/push/pusher.ts';
import { outcomeOfRecord, RecordedPushFlow, viewOfPushRecord } from '../../lib/server/core/push/records.ts';
import { type PushInvocation, type PushJob, runPushJob } from '../../lib/server/core/push/runs.ts';
import { pushTaskFunctions } from '../../lib/server/core/push/steps.ts';
import { MemoryPushWork } from '../../lib/server/core/push/work.ts';
import { RecordingLog } from '../support/control-fakes.ts';
import { MemoryMeshStore } from '../support/memory-mesh-store.ts';
import { MemoryPushRecords } from '../support/memory-push-records.ts';
import { unsealedMint } from '../support/sealing.ts';

/**
 * push-run hands a push on to a fresh invocation of itself before its time runs out
 * (lib/server/core/push/executions.ts): with executions that pause after their first page and
 * invocations with no time for a second execution, a push of three pages runs in three
 * invocations, its record `running` between them, and ends as one invocation's run does.
 */
const behind = 2_001; // three pages of 1,000

async function pushed(invocation: { timeoutSeconds: number; reserveMs: number } | undefined) {
  const store = new MemoryMeshStore();
  for (let i = 0; i < behind; i += 1) await store.addNode(`n${String(i).padStart(5, '0')}`);
  const records = new MemoryPushRecords();
  const log = new RecordingLog();
  const tasks = pushTaskFunctions(new Pusher({ store, mint: unsealedMint }), {
    work: new MemoryPushWork(),
    executionBudgetMs: 0,
  });
  const pushFlow = new RecordedPushFlow({
    flow: new LocalPushFlow({ tasks }),
    records,
    log,
    now: () => new Date(),
  });
  const seen: Array<{ state: string; handOvers: number }> = [];
  const run = async (job: PushJob, invoked: PushInvocation) => {
    const record = await records.read(job.pushId);
    if (record)
      seen.push({ state: viewOfPushRecord(record, new Date()).state, handOvers: record.handOvers ?? 0 });
    await runPushJob(
      job,
      { pushFlow, log },
      invocation ? { ...invoked, reserveMs: invocation.reserveMs } : undefined,
    );
  };
  const starter = new InProcessPushStarter(
    run,
    invocation ? { timeoutSeconds: invocation.timeoutSeconds } : {},
  );
  const pushId = '20261206T012000000Z-38f38f';
  await records.start({
    id: pushId,
    state: 'running',
    requestedBy: 'local',
    startedAt: new Date().toISOString(),
    finishedAt: null,
    request: { node: null, behind: true, full: false, maxRounds: null },
    outcome: null,
    pushed: null,
    flushed: [],
    flushedCount: 0,
    rounds: null,
    behind: [],
    behindCount: 0,
    error: null,
  });
  const done = await starter.start({ pushId, request: { behind: true }, requestedBy: 'local' }, 60_000);
  const record = await records.read(pushId);
  return { done, record, invocations: starter.invocations, seen, log };
}

describe('a push longer than one push-run invocation', () => {
  it('is handed on to fresh invocations and ends as one run does', async () => {
    const whole = await pushed(undefined);
    // every invocation has a minute, and keeps a minute for an execution: none has time for a second
    const handed = await pushed({ timeoutSeconds: 60, reserveMs: 60_000 });
    expect(whole.invocations).toBe(1);
    expect(handed.invocations).toBe(3);
    expect(handed.done).toBe(true);
    // each later invocation found the record running, handed on once more
    expect(handed.seen).toEqual([
      { state: 'running', handOvers: 0 },
      { state: 'running', handOvers: 1 },
      { state: 'running', handOvers: 2 },
    ]);
    expect(handed.record?.state).toBe('done');
    expect(handed.record?.outcome).toBe('consistent');
    expect(handed.record?.flushedCount).toBe(behind);
    expect(handed.record?.handOvers).toBe(2);
    if (!whole.record || !handed.record) throw new Error('a push left no record');
    expect(outcomeOfRecord(handed.record)).toEqual(outcomeOfRecord(whole.record));
    expect(handed.log.lines).toEqual([]);
    // two pushes of 2,001 nodes through the ASL: about 2 s, more on a loaded machine
  }, 30_000);

  it('is shown running, not unfinished, past 15 minutes when it was handed on since', () => {
    const startedAt = new Date('2026-12-06T00:00:00Z');
    const record = {
      ...({} as Parameters<typeof viewOfPushRecord>[0]),
      state: 'running' as const,
      startedAt: startedAt.toISOString(),
    };
    const later = new Date(startedAt.getTime() + 20 * 60_000);
    expect(viewOfPushRecord(record, later).state).toBe('unfinished');
    const handedOn = { ...record, handedOnAt: new Date(startedAt.getTime() + 14 * 60_000).toISOString() };
    expect(viewOfPushRecord(handedOn, later).state).toBe('running');
  });
});
