import { describe, expect, it } from 'vitest';
import { PushFlowFailedError } from '../../lib/server/core/mesh/errors.ts';
import type { PushAsker, PushFlow, PushOutcome, PushRequest } from '../../lib/server/core/push/ports.ts';
import {
  keptNodesPerList,
  newPushId,
  type PushRecord,
  pushId,
  RecordedPushFlow,
  viewOfPushRecord,
} from '../../lib/server/core/push/records.ts';
import { RecordingLog } from '../support/control-fakes.ts';
import { MemoryPushRecords } from '../support/memory-push-records.ts';

const t0 = new Date('2026-07-22T10:15:00.123Z');

function world(answer: (request: PushRequest) => Promise<PushOutcome>) {
  const records = new MemoryPushRecords();
  const seenByFlow: Array<{ request: PushRequest; asker: PushAsker | undefined; kept: PushRecord[] }> = [];
  const flow: PushFlow = {
    push: async (request, asker) => {
      seenByFlow.push({ request, asker, kept: [...records.kept.values()] });
      return answer(request);
    },
  };
  const log = new RecordingLog();
  let now = t0;
  const recorded = new RecordedPushFlow({ flow, records, log, now: () => now });
  return {
    records,
    seenByFlow,
    log,
    recorded,
    later: (ms: number) => {
      now = new Date(now.getTime() + ms);
    },
  };
}

const outcome = (behind: string[] = []): PushOutcome => ({
  pushed: { node: 'web1', revision: 3 },
  flushed: [{ node: 'broker', revision: 2, round: 1 }],
  rounds: 1,
  behind,
});

describe('RecordedPushFlow', () => {
  it('keeps the push running before the flow starts, and done with what it sent when it answers', async () => {
    const w = world(async () => outcome());
    const answer = await w.recorded.push(
      { node: 'web1' },
      { requestedBy: 'arn:aws:iam::1:user/ana', pushId: 'p1' },
    );
    expect(answer).toEqual(outcome());
    expect(w.seenByFlow).toEqual([
      {
        // the flow hears the record's id, to report its rounds to, and never who asked
        request: { node: 'web1', pushId: 'p1' },
        asker: undefined,
        kept: [
          expect.objectContaining({ id: 'p1', state: 'running', requestedBy: 'arn:aws:iam::1:user/ana' }),
        ],
      },
    ]);
    expect(w.records.kept.get('p1')).toEqual({
      id: 'p1',
      state: 'done',
      requestedBy: 'arn:aws:iam::1:user/ana',
      startedAt: t0.toISOString(),
      finishedAt: t0.toISOString(),
      request: { node: 'web1', behind: false, full: false, maxRounds: null },
      outcome: 'consistent',
      pushed: { node: 'web1', revision: 3 },
      flushed: [{ node: 'broker', revision: 2, round: 1 }],
      flushedCount: 1,
      rounds: 1,
      behind: [],
      behindCount: 0,
      error: null,
      progress: { round: 1, flushedCount: 1, pending: 0 },
    });
  });

  it('says what was still behind at the bound, keeping at most a thousand names but counting all', async () => {
    const many = Array.from({ length: keptNodesPerList + 5 }, (_, i) => `n${i}`);
    const w = world(async () => outcome(many));
    await w.recorded.push({ behind: true, full: true, maxRounds: 2 }, { requestedBy: 'local', pushId: 'p2' });
    expect(w.records.kept.get('p2')).toMatchObject({
      outcome: 'still-behind',
      request: { node: null, behind: true, full: true, maxRounds: 2 },
      behindCount: keptNodesPerList + 5,
    });
    expect(w.records.kept.get('p2')?.behind).toHaveLength(keptNodesPerList);
  });

  it('keeps a failed push by the name of what failed, and still throws it', async () => {
    const failure = new PushFlowFailedError('States.Timeout', 'the push flow ended TIMED_OUT');
    const w = world(async () => {
      throw failure;
    });
    await expect(w.recorded.push({ node: 'web1' }, { requestedBy: 'local', pushId: 'p3' })).rejects.toBe(
      failure,
    );
    expect(w.records.kept.get('p3')).toMatchObject({
      state: 'done',
      outcome: 'failed',
      error: 'States.Timeout',
    });
  });

  it('pushes all the same when its record cannot be written, and says so in the log', async () => {
    const w = world(async () => outcome());
    w.records.down = true;
    expect(await w.recorded.push({ node: 'web1' }, { requestedBy: 'local', pushId: 'p4' })).toEqual(
      outcome(),
    );
    expect(w.log.coded.map((line) => [line.code, line.fields.state])).toEqual([
      ['push.record-not-kept', 'running'],
      ['push.record-not-kept', 'done'],
    ]);
    expect(w.log.lines[0]?.message).toBe('could not keep the record of push p4 (running)');
  });

  it('makes an id that sorts by time when none is given', async () => {
    const w = world(async () => outcome());
    await w.recorded.push({ node: 'web1' }, { requestedBy: 'local' });
    w.later(1);
    await w.recorded.push({ node: 'web1' });
    const ids = [...w.records.kept.keys()];
    expect(ids.every((id) => pushId.safeParse(id).success)).toBe(true);
    expect([...ids].sort()).toEqual(ids);
    expect(w.records.kept.get(ids[1] as string)?.requestedBy).toBe('unknown');
  });
});

describe('push ids and views', () => {
  it('an id is the start time to the millisecond and six hex digits', () => {
    expect(newPushId(t0, () => '4f2a9c')).toBe('20260722T101500123Z-4f2a9c');
  });

  it('a push still running past the longest a flow can run is shown unfinished', () => {
    const running = { state: 'running', startedAt: t0.toISOString() } as PushRecord;
    expect(viewOfPushRecord(running, new Date(t0.getTime() + 14 * 60_000)).state).toBe('running');
    expect(viewOfPushRecord(running, new Date(t0.getTime() + 15 * 60_000 + 1)).state).toBe('unfinished');
  });
});
