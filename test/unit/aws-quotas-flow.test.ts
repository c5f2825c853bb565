import { describe, expect, it } from 'vitest';
import { invocation } from '../../lib/local/aws-quotas.ts';
import { LocalPushFlow } from '../../lib/local/local-push-flow.ts';
import { historyOfRollouts } from '../../lib/local/rollout-driver.ts';
import { historyEvents, SteppingHistory } from '../../lib/local/stepping-history.ts';
import { byShard, defaultParallelShards } from '../../lib/local/stream-source.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { PushFlowFailedError } from '../../lib/server/core/mesh/errors.ts';
import { MeshService } from '../../lib/server/core/mesh/service.ts';
import { Pusher } from '../../lib/server/core/push/pusher.ts';
import { pushTaskFunctions } from '../../lib/server/core/push/steps.ts';
import { driveRunning } from '../../lib/server/core/rollout/drive.ts';
import { RecordingLog } from '../support/control-fakes.ts';
import { MemoryMeshStore } from '../support/memory-mesh-store.ts';

/** `count` behind nodes whose names are 63 characters, the longest a node may have. */
async function behindMesh(count: number) {
  const store = new MemoryMeshStore();
  const service = new MeshService({ store, removals: store });
  for (let i = 0; i < count; i++)
    await service.addNode(`n${String(i).padStart(6, '0')}-${'x'.repeat(55)}`, {}, localActor());
  return store;
}

const failure = async (run: Promise<unknown>) => {
  const error = await run.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(PushFlowFailedError);
  return error as PushFlowFailedError;
};

describe('the push flow holds Step Functions’ quotas', () => {
  it('a task whose result passes 256 KiB fails the push with States.DataLimitExceeded', async () => {
    const store = await behindMesh(2);
    const tasks = pushTaskFunctions(new Pusher({ store }));
    const swollen = {
      ...tasks,
      FindBehind: async (input: unknown) => ({
        ...(await tasks.FindBehind(input)),
        padding: 'x'.repeat(270_000),
      }),
    };
    const flow = new LocalPushFlow({ tasks: swollen, retryIntervalMs: 0 });

    const error = await failure(flow.push({ behind: true }));

    expect(error.error).toBe('States.DataLimitExceeded');
    expect(error.message).toMatch(
      /'FindBehind' returned a result with a size exceeding the maximum number of bytes/,
    );
  });

  it('a push --behind of 2,000 nodes with the longest names stays inside the quota', {
    timeout: 30_000,
  }, async () => {
    const store = await behindMesh(2_000);
    let largest = 0;
    const flow = new LocalPushFlow({
      tasks: pushTaskFunctions(new Pusher({ store })),
      retryIntervalMs: 0,
      measured: (_state, bytes) => {
        largest = Math.max(largest, bytes);
      },
    });

    const outcome = await flow.push({ behind: true });

    expect(outcome.flushed).toHaveLength(2_000);
    expect(largest).toBeGreaterThan(0);
    expect(largest).toBeLessThan(262_144);
  });

  it('a push under the quota passes', async () => {
    const store = await behindMesh(50);
    const flow = new LocalPushFlow({ tasks: pushTaskFunctions(new Pusher({ store })), retryIntervalMs: 0 });

    const outcome = await flow.push({ behind: true });

    expect(outcome.flushed).toHaveLength(50);
  });

  it('an execution past Express’s limit is stopped with States.Timeout', async () => {
    const store = await behindMesh(2);
    const tasks = pushTaskFunctions(new Pusher({ store }));
    const slow = {
      ...tasks,
      FindBehind: async (input: unknown) => {
        await new Promise((resolve) => setTimeout(resolve, 300));
        return tasks.FindBehind(input);
      },
    };
    const flow = new LocalPushFlow({ tasks: slow, retryIntervalMs: 0, expressMs: 100 });

    const error = await failure(flow.push({ behind: true }));

    expect(error.error).toBe('States.Timeout');
  });
});

describe('each invocation holds its function’s Lambda quotas', () => {
  const never = () => new Promise<never>(() => undefined);

  it('past its timeout an invocation fails with Sandbox.Timedout', async () => {
    await expect(invocation('push-send', never, { timeoutSeconds: 0.05 })).rejects.toMatchObject({
      name: 'Sandbox.Timedout',
      message: expect.stringMatching(/Task timed out after 0\.05 seconds/),
    });
  });

  it('past its reserved concurrency an invocation is throttled', async () => {
    // no shipped row reserves concurrency (a new account's quota may be 10): a row of the test's own
    const spec = { timeoutSeconds: 10, reservedConcurrency: 3 };
    const held = Array.from({ length: 3 }, () => {
      const { promise: work, resolve: end } = Promise.withResolvers<void>();
      return { end, run: invocation('reserving', () => work, { spec }) };
    });

    await expect(invocation('reserving', async () => 'ran', { spec })).rejects.toMatchObject({
      name: 'Lambda.TooManyRequestsException',
    });
    for (const one of held) one.end();
    await Promise.all(held.map((one) => one.run));
    await expect(invocation('reserving', async () => 'ran', { spec })).resolves.toBe('ran');
  });

  it('a synchronous payload over 6 MB and an asynchronous one over 256 KB are refused', async () => {
    const big = (bytes: number) => ({ body: 'x'.repeat(bytes) });

    await expect(invocation('push-send', async () => 1, { payload: big(6_300_000) })).rejects.toMatchObject({
      name: 'Lambda.RequestTooLargeException',
    });
    await expect(
      invocation('push-run', async () => undefined, { payload: big(270_000), type: 'event' }),
    ).rejects.toMatchObject({ name: 'Lambda.RequestTooLargeException' });
    await expect(invocation('push-send', async () => big(6_300_000))).rejects.toMatchObject({
      name: 'Lambda.ResponseSizeTooLarge',
    });
    await expect(invocation('push-send', async () => 1, { payload: big(200_000) })).resolves.toBe(1);
  });
});

describe('a rollout’s Standard execution holds 25,000 history events', () => {
  it('counts 9 events a loop as AWS does, and a rollout past the limit is stepped no more', async () => {
    const log = new RecordingLog();
    const steps: string[] = [];
    const parts = {
      rollouts: {
        step: async (id: string) => {
          steps.push(id);
          return { record: {}, decision: { kind: 'send', wave: 0, nodes: [] } };
        },
      },
      rolloutStore: { running: async () => ['r1'] },
      log,
    } as unknown as Parameters<typeof historyOfRollouts>[0];
    // ExecutionStarted and three loops: 28 events; a fourth passes 30
    const history = new SteppingHistory('rollout flow', 30);
    history.started('r1');
    const deps = historyOfRollouts(parts, history);

    for (let tick = 0; tick < 6; tick++) await driveRunning(deps);

    expect(steps).toHaveLength(4);
    expect(history.events('r1')).toBe(1 + 4 * historyEvents.loop);
    expect(history.dead('r1')).toBe(true);
    expect(log.lines.map((line) => line.message).join('\n')).toMatch(
      /States\.Runtime.*history reached 37 events/,
    );
  });

  it('a waiting rollout loops once each flowPollSeconds, not each local tick', async () => {
    let clock = 0;
    const parts = {
      rollouts: { step: async () => ({ record: {}, decision: { kind: 'wait', until: '' } }) },
      rolloutStore: { running: async () => ['r1'] },
      log: new RecordingLog(),
    } as unknown as Parameters<typeof historyOfRollouts>[0];
    const history = new SteppingHistory('rollout flow');
    history.started('r1');
    const deps = historyOfRollouts(parts, history, () => clock);

    // a minute of one-second ticks
    for (let tick = 0; tick < 60; tick++, clock += 1_000) await driveRunning(deps);

    expect(history.events('r1')).toBe(1 + 6 * historyEvents.loop);
  });
});

describe('a table’s stream is read as several shards at once, as on AWS', () => {
  it('splits a batch among shards by item, each item’s records in order in one shard', () => {
    const record = (pk: string, n: number) => ({
      dynamodb: { Keys: { pk: { S: pk }, sk: { S: 'node' } }, SequenceNumber: String(n) },
    });
    const records = Array.from({ length: 40 }, (_, n) => record(`node#${n % 8}`, n));

    const shards = byShard(records, defaultParallelShards);

    expect(shards).toHaveLength(defaultParallelShards);
    expect(shards.filter((shard) => shard.length > 0).length).toBeGreaterThan(1);
    expect(shards.flat()).toHaveLength(40);
    for (const shard of shards) {
      const sequence = shard.map((one) => Number(one.dynamodb?.SequenceNumber));
      expect(sequence).toEqual([...sequence].sort((a, b) => a - b));
    }
    const shardOf = new Map<string, number>();
    shards.forEach((shard, index) => {
      for (const one of shard) {
        const pk = one.dynamodb?.Keys?.pk?.S ?? '';
        expect(shardOf.get(pk) ?? index).toBe(index);
        shardOf.set(pk, index);
      }
    });
    // an item's shard does not depend on what else its batch holds (a re-read, a smaller batch)
    for (const [pk, index] of shardOf)
      expect(byShard([record(pk, 99)], defaultParallelShards)[index]?.length, pk).toBe(1);
  });
});
