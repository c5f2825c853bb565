import { SFNClient } from '@aws-sdk/client-sfn';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { InProcessPushStarter } from '../../lib/local/in-process-push-starter.ts';
import { localLambdaContext } from '../../lib/local/lambda-context.ts';
import { LocalPushFlow } from '../../lib/local/local-push-flow.ts';
import { StepFunctionsPushFlow } from '../../lib/server/adapters/push/step-functions-push-flow.ts';
import { meshPushHandler } from '../../lib/server/api/handlers/mesh.ts';
import { meshProblem } from '../../lib/server/api/mesh-problems.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { MeshRaceError, PushFlowFailedError } from '../../lib/server/core/mesh/errors.ts';
import type { NodeSnapshot } from '../../lib/server/core/mesh/model.ts';
import { MeshService } from '../../lib/server/core/mesh/service.ts';
import type { SendWrite } from '../../lib/server/core/mesh/store.ts';
import type { PushFlow } from '../../lib/server/core/push/ports.ts';
import { Pusher } from '../../lib/server/core/push/pusher.ts';
import { RecordedPushFlow } from '../../lib/server/core/push/records.ts';
import { runPushJob } from '../../lib/server/core/push/runs.ts';
import { Pushes } from '../../lib/server/core/push/service.ts';
import { pushTaskFunctions } from '../../lib/server/core/push/steps.ts';
import { MemoryPushWork } from '../../lib/server/core/push/work.ts';
import { StoreUnavailableError } from '../../lib/server/core/unavailable.ts';
import {
  pushTasks,
  readPushDefinition,
  retriedByFlow,
  runPushDefinition,
} from '../../lib/server/flows/push-definition.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import { RecordingLog } from '../support/control-fakes.ts';
import { nothingHolds } from '../support/memory-holds.ts';
import { MemoryMeshStore } from '../support/memory-mesh-store.ts';
import { MemoryPushRecords } from '../support/memory-push-records.ts';

/** A memory store whose reads, listings or sends fail with what a real one would throw. */
class FailingStore extends MemoryMeshStore {
  readFailures = 0;
  listFailures = 0;
  sendsLose = false;

  override async readNode(node: string): Promise<NodeSnapshot | undefined> {
    if (this.readFailures > 0) {
      this.readFailures -= 1;
      throw new StoreUnavailableError('the inventory table');
    }
    return super.readNode(node);
  }

  override async listMarked(): Promise<string[]> {
    if (this.listFailures > 0) {
      this.listFailures -= 1;
      throw new StoreUnavailableError('the inventory table');
    }
    return super.listMarked();
  }

  /** Sends of a node that lose their race, as many as its count. */
  readonly losing = new Map<string, number>();

  override async send(write: SendWrite): Promise<void> {
    if (this.sendsLose) throw new MeshRaceError('revision');
    const losses = this.losing.get(write.node) ?? 0;
    if (losses > 0) {
      this.losing.set(write.node, losses - 1);
      throw new MeshRaceError('revision');
    }
    return super.send(write);
  }
}

async function mesh(nodes: readonly string[]) {
  const store = new FailingStore();
  const service = new MeshService({ store, removals: store });
  for (const node of nodes) {
    await service.addNode(node, {}, localActor());
    await service.assign(node, 'web', null, localActor());
  }
  const flow = new LocalPushFlow({
    tasks: pushTaskFunctions(new Pusher({ store: store })),
    retryIntervalMs: 0,
  });
  return { store, flow };
}

type Answer = { statusCode: number; body: string; headers?: Record<string, string> };

/** `POST /push` as deployed: the record written, the push started elsewhere, its record awaited. */
const post = async (store: MemoryMeshStore, pushFlow: PushFlow, request: object) => {
  const pushRecords = new MemoryPushRecords();
  const log = new RecordingLog();
  const now = () => new Date();
  const recorded = new RecordedPushFlow({ flow: pushFlow, records: pushRecords, log, now });
  const handler = meshPushHandler({
    pushes: new Pushes({
      store,
      records: pushRecords,
      starter: new InProcessPushStarter((job) => runPushJob(job, { pushFlow: recorded, log })),
      holds: nothingHolds,
      // A push reads no delivery; only a plan does, and none is asked for here.
      deliveries: { readDelivery: async () => undefined },
      runSteps: runPushDefinition,
      now,
    }),
    config: { pushWaitSeconds: 10 } as MeshConfig,
  });
  const answer = (await handler(
    { headers: {}, pathParameters: null, body: JSON.stringify(request) } as APIGatewayProxyEvent,
    localLambdaContext('mesh-push') as never,
  )) as Answer;
  const { error } = JSON.parse(answer.body) as { error?: { code: string; message: string } };
  return {
    status: answer.statusCode,
    code: error?.code,
    message: error?.message ?? '',
    retryAfter: answer.headers?.['retry-after'],
  };
};

describe('the push flow retries a store that is away for a moment', () => {
  it('retries the Begin Task when the store could not be reached', async () => {
    // Prepare
    const { store, flow } = await mesh(['a']);
    store.readFailures = 1;

    // Act
    const outcome = await flow.push({ node: 'a' });

    // Assess
    expect(outcome.pushed).toEqual({ node: 'a', revision: 1 });
    expect(store.readFailures).toBe(0);
  });

  it('retries a Send Task inside the Map', async () => {
    const { store, flow } = await mesh(['a', 'b']);
    store.readFailures = 2;

    const outcome = await flow.push({ behind: true });

    expect(outcome.behind).toEqual([]);
    expect(store.deliveries.has('a') && store.deliveries.has('b')).toBe(true);
  });

  it('tries a flushed node that kept losing its race again in the next round, rather than failing the push', async () => {
    // a provider whose consumers all mint into it in the same round loses every attempt of one round
    const { store, flow } = await mesh(['a', 'b']);
    store.losing.set('b', 5);

    const outcome = await flow.push({ behind: true });

    expect(outcome.behind).toEqual([]);
    expect(outcome.flushed.map(({ node, round }) => [node, round])).toEqual([
      ['a', 1],
      ['b', 2],
    ]);
  });

  it('every Task retries exactly the failures whose rows say the flow retries them, each once', () => {
    const states = JSON.parse(readPushDefinition()) as {
      States: Record<string, { ItemProcessor?: { States: Record<string, unknown> } }>;
    };
    const all = { ...states.States, ...states.States.SendBehind?.ItemProcessor?.States } as Record<
      string,
      { Retry?: Array<{ ErrorEquals: string[] }> }
    >;

    const retried = Object.keys(pushTasks).map((task) => [
      task,
      (all[task]?.Retry ?? []).flatMap((retrier) => retrier.ErrorEquals).sort(),
    ]);

    const expected = [...retriedByFlow].sort();
    expect(retried).toEqual(Object.keys(pushTasks).map((task) => [task, expected]));
    expect(expected).toEqual([
      'Lambda.AWSLambdaException',
      'Lambda.SdkClientException',
      'Lambda.ServiceException',
      'Lambda.TooManyRequestsException',
      new StoreUnavailableError('x').name,
    ]);
  });

  it('answers every failure the flow retried, once its retries ran out, as try again', () => {
    const answers = retriedByFlow.map((name) => meshProblem(new PushFlowFailedError(name, 'm')));

    expect(answers.map((answer) => [answer?.status, answer?.code])).toEqual(
      retriedByFlow.map(() => [503, 'try_again']),
    );
  });
});

describe('POST /push answers a failed flow by what failed', () => {
  it('answers 503 try_again when the store stays away past the retries', async () => {
    const { store, flow } = await mesh(['a']);
    store.listFailures = 10;

    const answer = await post(store, flow, { behind: true });

    expect(answer).toMatchObject({ status: 503, code: 'try_again', retryAfter: '2' });
  });

  it('answers 503 try_again when a Send inside the Map keeps failing', async () => {
    const { store, flow } = await mesh(['a']);
    store.readFailures = 10;

    const answer = await post(store, flow, { behind: true });

    expect(answer).toMatchObject({ status: 503, code: 'try_again', retryAfter: '2' });
  });

  it('answers contention as 503 try_again naming the node another push holds', async () => {
    const { store, flow } = await mesh(['a']);
    store.sendsLose = true;

    const answer = await post(store, flow, { node: 'a' });

    expect(answer).toMatchObject({ status: 503, code: 'try_again', retryAfter: '1' });
    expect(answer.message).toContain('another push holds node a');
  });
});

/** An SFN client answering from a fixed HTTP response, as the service would (no network). */
function sfnAnswering(status: number, body: object, errorType?: string) {
  return new SFNClient({
    region: 'us-east-1',
    maxAttempts: 1,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    requestHandler: {
      handle: async () => ({
        response: {
          statusCode: status,
          reason: '',
          headers: {
            'content-type': 'application/x-amz-json-1.0',
            ...(errorType ? { 'x-amzn-errortype': errorType } : {}),
          },
          body: new TextEncoder().encode(JSON.stringify(body)),
        },
      }),
    } as never,
  });
}

describe('POST /push on the deployed flow (StartSyncExecution)', () => {
  const arn = 'arn:aws:states:us-east-1:000000000000:stateMachine:push';
  const failed = (error: string, errorMessage: string) => ({
    status: 'FAILED',
    error,
    cause: JSON.stringify({ errorType: error, errorMessage, trace: ['at secret (/var/task/x.js:1:1)'] }),
  });
  const answerTo = async (client: SFNClient) => {
    const store = new MemoryMeshStore();
    return post(
      store,
      new StepFunctionsPushFlow({ client, stateMachineArn: arn, work: new MemoryPushWork() }),
      { behind: true },
    );
  };

  it('answers 503 try_again when Step Functions throttles the start', async () => {
    const client = sfnAnswering(400, { __type: 'ThrottlingException', message: 'Rate exceeded' });

    expect(await answerTo(client)).toMatchObject({ status: 503, code: 'try_again' });
  });

  it('maps a Task’s error by its name, keeping only its message', async () => {
    const answers = {
      store: await answerTo(sfnAnswering(200, failed('StoreUnavailableError', 'away'))),
      lambda: await answerTo(sfnAnswering(200, failed('Lambda.TooManyRequestsException', 'busy'))),
      contention: await answerTo(
        sfnAnswering(200, failed('PushContentionError', 'another push holds node a')),
      ),
      unknown: await answerTo(sfnAnswering(200, failed('NodeNotFoundError', 'no node named ghost'))),
      defect: await answerTo(sfnAnswering(200, failed('TypeError', 'x is undefined'))),
    };

    expect(Object.fromEntries(Object.entries(answers).map(([k, a]) => [k, [a.status, a.code]]))).toEqual({
      store: [503, 'try_again'],
      lambda: [503, 'try_again'],
      contention: [503, 'try_again'],
      unknown: [404, 'node_not_found'],
      defect: [500, 'internal'],
    });
    expect(answers.unknown.message).toBe('no node named ghost');
    expect(answers.defect.message).not.toContain('undefined');
  });
});
