import type { APIGatewayProxyEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { InProcessPushStarter } from '../../lib/local/in-process-push-starter.ts';
import { localLambdaContext } from '../../lib/local/lambda-context.ts';
import { LocalPushFlow } from '../../lib/local/local-push-flow.ts';
import { meshPushHandler } from '../../lib/server/api/handlers/mesh.ts';
import { answerEarlyMs, gatewayTimeoutMs, timeToAnswer } from '../../lib/server/api/http.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { MeshService } from '../../lib/server/core/mesh/service.ts';
import type { PushFlow } from '../../lib/server/core/push/ports.ts';
import { Pusher } from '../../lib/server/core/push/pusher.ts';
import { outcomeOfRecord, RecordedPushFlow } from '../../lib/server/core/push/records.ts';
import { runPushJob } from '../../lib/server/core/push/runs.ts';
import { Pushes } from '../../lib/server/core/push/service.ts';
import { pushTaskFunctions } from '../../lib/server/core/push/steps.ts';
import { runPushDefinition } from '../../lib/server/flows/push-definition.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import { RecordingLog } from '../support/control-fakes.ts';
import { nothingHolds } from '../support/memory-holds.ts';
import { MemoryMeshStore } from '../support/memory-mesh-store.ts';
import { MemoryPushRecords } from '../support/memory-push-records.ts';

/** Nodes behind (a, b, c unless named); the flow's steps in-process, their progress noted in the records. */
async function world(options: {
  waitSeconds?: number;
  gate?: Promise<void>;
  nodes?: string[];
  /** The invocation's time, as Lambda gives it (API Gateway's own 29 s is longer in these tests). */
  invocationMs?: number;
}) {
  const store = new MemoryMeshStore();
  const service = new MeshService({ store, removals: store });
  for (const node of options.nodes ?? ['a', 'b', 'c']) {
    await service.addNode(node, {}, localActor());
    await service.assign(node, 'web', null, localActor());
  }
  const records = new MemoryPushRecords();
  const log = new RecordingLog();
  const now = () => new Date();
  const local = new LocalPushFlow({
    tasks: pushTaskFunctions(new Pusher({ store }), {
      progress: { round: (id, p) => records.progress(id, p), batch: (id, d) => records.batchDone(id, d) },
    }),
  });
  // a flow that waits for the gate first: a push longer than the request may wait
  const slow: PushFlow = {
    push: async (request) => {
      await options.gate;
      return local.push(request);
    },
  };
  const pushFlow = new RecordedPushFlow({ flow: slow, records, log, now });
  const starter = new InProcessPushStarter((job) => runPushJob(job, { pushFlow, log }));
  const handler = meshPushHandler({
    pushes: new Pushes({
      store,
      records: records,
      starter: starter,
      holds: nothingHolds,
      // A push reads no delivery; only a plan does, and none is asked for here.
      deliveries: { readDelivery: async () => undefined },
      runSteps: runPushDefinition,
      now,
    }),
    config: (options.waitSeconds === undefined ? {} : { pushWaitSeconds: options.waitSeconds }) as MeshConfig,
  });
  const post = async (body: object) => {
    const answer = (await handler(
      {
        headers: {},
        pathParameters: null,
        body: JSON.stringify(body),
        requestContext: { requestTimeEpoch: Date.now() },
      } as APIGatewayProxyEvent,
      localLambdaContext('mesh-push', options.invocationMs) as never,
    )) as { statusCode: number; body: string; headers: Record<string, string> };
    return { status: answer.statusCode, body: JSON.parse(answer.body), headers: answer.headers };
  };
  return { records, starter, post, local, store };
}

describe('POST /push, started elsewhere and followed by its record', () => {
  it('answers the push contract when the push finishes in time, naming its record', async () => {
    const { post, records } = await world({ waitSeconds: 5 });

    const answer = await post({ behind: true });

    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      pushed: null,
      flushed: [
        { node: 'a', revision: 1, round: 1 },
        { node: 'b', revision: 1, round: 1 },
        { node: 'c', revision: 1, round: 1 },
      ],
      rounds: 1,
      behind: [],
    });
    const id = answer.headers['mesh-push'] as string;
    expect(answer.headers.location).toBe(`/pushes/${id}`);
    expect(records.kept.get(id)).toMatchObject({
      state: 'done',
      outcome: 'consistent',
      requestedBy: 'local',
    });
    // one batch: its end is the outcome's, so it writes no note of its own
    expect(records.batches).toEqual([]);
  });

  it('answers 202 with the push id when it runs longer than the wait; the record ends with the same outcome', async () => {
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const nodes = Array.from({ length: 30 }, (_, index) => `n${String(index).padStart(2, '0')}`);
    const { post, records, starter } = await world({ waitSeconds: 0.2, gate, nodes });

    const answer = await post({ behind: true });
    const whileRunning = records.kept.get(answer.body.push);
    open();
    await Promise.all(starter.running);
    const done = records.kept.get(answer.body.push);

    expect([answer.status, answer.body.state, answer.body.follow]).toEqual([
      202,
      'running',
      `/pushes/${answer.body.push}`,
    ]);
    expect(whileRunning?.state).toBe('running');
    expect(records.notes).toEqual([
      {
        id: answer.body.push,
        progress: { round: 1, flushedCount: 0, pending: 30, checked: 0, sentInRound: 0 },
      },
    ]);
    // two batches (25 and 5), each counting itself into the round as it finishes
    expect(records.batches.map(({ checked, sent }) => [checked, sent]).sort()).toEqual([
      [25, 25],
      [5, 5],
    ]);
    expect(done?.progress).toEqual({ round: 1, flushedCount: 30, pending: 0 });
    const outcome = outcomeOfRecord(done as NonNullable<typeof done>);
    expect([outcome.flushed.map((flushed) => flushed.node), outcome.behind]).toEqual([nodes, []]);
  });

  it('with wait: false answers at once, and refuses an unknown node before anything starts', async () => {
    const { post, records } = await world({ waitSeconds: 5 });

    const started = await post({ behind: true, wait: false });
    const unknown = await post({ node: 'ghost' });

    expect(started.status).toBe(202);
    expect([unknown.status, unknown.body.error.code]).toEqual([404, 'node_not_found']);
    expect(records.kept.size).toBe(1);
  });

  it('waits as long as the invocation has left, less the time to answer, then answers 202', async () => {
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const { post, starter } = await world({ gate, invocationMs: answerEarlyMs + 300 });

    const asked = Date.now();
    const answer = await post({ behind: true });
    const took = Date.now() - asked;
    open();
    await Promise.all(starter.running);

    expect(answer.status).toBe(202);
    expect(took).toBeGreaterThanOrEqual(250);
    expect(took).toBeLessThan(answerEarlyMs);
  });
});

describe('timeToAnswer', () => {
  const context = (remainingMs: number) => ({ getRemainingTimeInMillis: () => remainingMs });
  const received = (at: number) => ({ requestContext: { requestTimeEpoch: at } }) as APIGatewayProxyEvent;

  it('is the invocation’s remaining time less the time to answer', () => {
    expect(timeToAnswer(received(1_000), context(10_000), 1_000)).toBe(10_000 - answerEarlyMs);
  });

  it('ends with API Gateway’s 29 s from when the request came, when that is sooner', () => {
    expect(timeToAnswer(received(0), context(29_000), 5_000)).toBe(gatewayTimeoutMs - 5_000 - answerEarlyMs);
  });

  it('is nothing without a context, or once the time is spent', () => {
    expect([timeToAnswer(received(0), undefined, 0), timeToAnswer(received(0), context(500), 0)]).toEqual([
      0, 0,
    ]);
  });
});
