import { createHash } from 'node:crypto';
import { CreateQueueCommand, ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  makePollerSQSClient,
  type RunningEventSource,
  startEventSource,
} from '../../lib/local/event-source.ts';
import { localPartsFor } from '../../lib/local/parts.ts';
import { freePort } from '../../lib/local/tcp-ports.ts';
import { DynamoDBAuditTrail } from '../../lib/server/adapters/audit/audit-trail.ts';
import { makeDynamoDBClient, makeSQSClient } from '../../lib/server/adapters/aws-clients.ts';
import { DynamoDBBuildStore } from '../../lib/server/adapters/control/build-store.ts';
import { SqsControlSender } from '../../lib/server/adapters/control/control-sender.ts';
import { SqsQueueSettlement } from '../../lib/server/adapters/control/queue-settlement.ts';
import { DynamoDBReportStore } from '../../lib/server/adapters/control/report-store.ts';
import { documentClient } from '../../lib/server/adapters/dynamodb/requests.ts';
import {
  controlBuildHandler,
  controlCatchUpHandler,
  controlUpgradeHandler,
} from '../../lib/server/api/handlers/control.ts';
import { controlConsumerHandler } from '../../lib/server/api/handlers/control-consumer.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import type { ConsumerDeps } from '../../lib/server/core/control/consumer.ts';
import { StaleReportError } from '../../lib/server/core/control/errors.ts';
import { envelope, parseControlMessage } from '../../lib/server/core/control/messages.ts';
import type { Declaration } from '../../lib/server/core/mesh/declaration.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import { InMemoryMesh, RecordingLog } from '../support/control-fakes.ts';
import { lagIndexes } from '../support/lagging-indexes.ts';
import { provisionTestResources } from '../support/resources.ts';
import { sqsRecordOf } from '../support/sqs-records.ts';

const region = 'us-east-1';
const sqs = makeSQSClient({ region });
const dynamodb = makeDynamoDBClient({ region });
let config: MeshConfig;

beforeAll(async () => {
  config = await provisionTestResources('ctl');
});
afterAll(() => {
  sqs.destroy();
  dynamodb.destroy();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Reports are recorded for nodes that exist, of revisions they were sent: a node with one module, sent revision 1. */
async function sentNode(node: string) {
  const parts = localPartsFor(config, { overrides: { log: new RecordingLog() }, flowRetryIntervalMs: 0 });
  await parts.meshService.addNode(node, {}, localActor());
  await parts.meshService.assign(node, 'web', null, localActor());
  await parts.pushFlow.push({ node });
}
const timesNow = () => ({ heardAt: new Date().toISOString(), queuedAt: new Date().toISOString() });

async function until<T>(probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value !== undefined) return value;
    await sleep(100);
  }
  throw new Error(`not settled within ${timeoutMs} ms`);
}

async function receiveAll(queueUrl: string, visibility = 30) {
  const answer = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: 0,
      VisibilityTimeout: visibility,
      MessageAttributeNames: ['All'],
      MessageSystemAttributeNames: ['All'],
    }),
  );
  return answer.Messages ?? [];
}

function consumerDeps(overrides: Partial<ConsumerDeps> = {}) {
  const mesh = new InMemoryMesh();
  const log = new RecordingLog();
  const lost: string[] = [];
  const deps: ConsumerDeps = {
    reports: new DynamoDBReportStore(audited(documentClient(dynamodb), config.inventoryTable)),
    builds: new DynamoDBBuildStore(audited(documentClient(dynamodb), config.inventoryTable)),
    sender: new SqsControlSender({ client: sqs, queueUrl: config.controlQueueUrl }),
    settlement: new SqsQueueSettlement({ client: sqs, ...config }),
    moduleVersions: mesh,
    pushFlow: mesh,
    log,
    now: () => new Date(),
    clock: () => Date.now(),
    holdPolicy: { backoffSeconds: [1, 1, 2], boundSeconds: 120 },
    pushTimeoutMs: 2_000,
    countLost: (type) => lost.push(type),
    ...overrides,
  };
  return { deps, mesh, log, lost };
}

function running(deps: ConsumerDeps): RunningEventSource {
  return startEventSource({
    queueUrl: config.controlQueueUrl,
    sqs,
    handler: controlConsumerHandler({ consumer: deps }),
    pollers: 2,
    waitTimeSeconds: 1,
  });
}

/** A store's place in the table, with the audit trail its changes write their records to. */
const audited = (client: ReturnType<typeof documentClient>, tableName: string) => ({
  client,
  tableName,
  audit: new DynamoDBAuditTrail({ client, tableName, retentionDays: 365 }),
});

describe('report store over the wire', () => {
  it('keeps the newer report; an older one recorded late is refused with the kept sequence', async () => {
    const reports = new DynamoDBReportStore(audited(documentClient(dynamodb), config.inventoryTable));
    await sentNode('wire');
    const sentAt = new Date().toISOString();
    await reports.recordReport(
      { node: 'wire', sequence: 5, state: 'applied', revision: 1, sentAt },
      timesNow(),
    );
    const late = reports.recordReport(
      { node: 'wire', sequence: 4, state: 'applying', revision: 1, sentAt },
      timesNow(),
    );
    await expect(late).rejects.toBeInstanceOf(StaleReportError);
    await expect(late).rejects.toMatchObject({ recordedSequence: 5 });
    await reports.recordReport(
      { node: 'wire', sequence: 6, state: 'heartbeat', revision: 0, sentAt },
      timesNow(),
    );
    const { GetItemCommand } = await import('@aws-sdk/client-dynamodb');
    const item = await dynamodb.send(
      new GetItemCommand({
        TableName: config.inventoryTable,
        Key: { pk: { S: 'node#wire' }, sk: { S: 'report' } },
      }),
    );
    expect(item.Item).toMatchObject({
      sequence: { N: '6' },
      state: { S: 'applied' },
      revision: { N: '1' },
      appliedRevision: { N: '1' },
    });
  });
});

describe('reports of one node in one batch, over the wire', () => {
  it('an applied report followed by a heartbeat leaves the node applied, with its applied revision', async () => {
    // Prepare
    const { deps } = consumerDeps();
    const handler = controlConsumerHandler({ consumer: deps });
    await sentNode('batched');
    const sentAt = new Date().toISOString();
    const reportOf = (sequence: number, state: 'applied' | 'heartbeat', revision: number) =>
      envelope('report', { node: 'batched', sequence, state, revision, sentAt });
    const recordOf = (message: ReturnType<typeof reportOf>) =>
      sqsRecordOf(message, `m-${message.body.sequence}`);
    // Act
    const answer = await handler(
      { Records: [recordOf(reportOf(5, 'applied', 1)), recordOf(reportOf(6, 'heartbeat', 0))] },
      {} as Context,
    );
    // Assess
    expect(answer.batchItemFailures).toEqual([]);
    const { GetItemCommand } = await import('@aws-sdk/client-dynamodb');
    const item = await dynamodb.send(
      new GetItemCommand({
        TableName: config.inventoryTable,
        Key: { pk: { S: 'node#batched' }, sk: { S: 'report' } },
      }),
    );
    expect(item.Item).toMatchObject({
      sequence: { N: '6' },
      state: { S: 'applied' },
      revision: { N: '1' },
      appliedRevision: { N: '1' },
      appliedAt: { S: expect.any(String) },
    });
  });
});

describe('build store over the wire', () => {
  it('finds a build recorded a moment before, with every index read stale', async () => {
    const own = await provisionTestResources('builds');
    const client = makeDynamoDBClient({ region });
    const { staleReads } = lagIndexes(client);
    const builds = new DynamoDBBuildStore(audited(documentClient(client), own.inventoryTable));
    const finishedAt = new Date().toISOString();
    const receivedAt = (ms: number) => {
      const at = new Date(Date.parse(finishedAt) + ms).toISOString();
      return { receivedAt: at, recordedAt: at };
    };
    await builds.recordBuild(
      { id: 'fresh-1', module: 'fresh', version: '1', result: 'succeeded', finishedAt },
      receivedAt(0),
      localActor(),
    );
    await builds.latestSuccessfulBuilds();
    await builds.recordBuild(
      { id: 'fresh-2', module: 'fresh', version: '2', result: 'succeeded', finishedAt },
      receivedAt(1000),
      localActor(),
    );

    const latest = await builds.latestSuccessfulBuilds();

    expect(latest.find((build) => build.module === 'fresh')).toMatchObject({ id: 'fresh-2', version: '2' });
    expect(staleReads()).toBe(0);
    client.destroy();
  });

  it("keeps a build once and finds each module's latest successful build", async () => {
    const builds = new DynamoDBBuildStore(audited(documentClient(dynamodb), config.inventoryTable));
    const at = (minute: number) => `2026-09-22T10:0${minute}:00Z`;
    const received = (minute: number) => ({ receivedAt: at(minute), recordedAt: at(minute) });
    expect(
      await builds.recordBuild(
        { id: 'w1', module: 'web', version: '1', result: 'succeeded', finishedAt: at(1) },
        received(1),
        localActor(),
      ),
    ).toBe('recorded');
    expect(
      await builds.recordBuild(
        { id: 'w1', module: 'web', version: '9', result: 'failed', finishedAt: at(9) },
        received(9),
        localActor(),
      ),
    ).toBe('repeat');
    await builds.recordBuild(
      { id: 'w2', module: 'web', version: '2', result: 'succeeded', finishedAt: at(2) },
      received(2),
      localActor(),
    );
    await builds.recordBuild(
      { id: 'w3', module: 'web', version: '3', result: 'failed', finishedAt: at(3) },
      received(3),
      localActor(),
    );
    await builds.recordBuild(
      { id: 'x1', module: 'web-x', version: '7', result: 'succeeded', finishedAt: at(0) },
      received(0),
      localActor(),
    );
    const latest = await builds.latestSuccessfulBuilds();
    expect(latest.map((build) => [build.module, build.version, build.id]).sort()).toEqual([
      ['web', '2', 'w2'],
      ['web-x', '7', 'x1'],
    ]);
  });
});

describe('the dead-letter copy of a message near the SQS limit', () => {
  it('is cut to fit, with the original size and digest, instead of being refused on every receive', async () => {
    // Prepare: a dead-letter queue that keeps to SQS's classic 256 KiB.
    const name = `${config.deadLetterQueueUrl.split('/').pop()?.replace('.fifo', '')}-256k.fifo`;
    const created = await sqs.send(
      new CreateQueueCommand({
        QueueName: name,
        Attributes: { FifoQueue: 'true', ContentBasedDeduplication: 'true', MaximumMessageSize: '262144' },
      }),
    );
    const deadLetterQueueUrl = created.QueueUrl ?? '';
    const settlement = new SqsQueueSettlement({
      client: sqs,
      controlQueueUrl: config.controlQueueUrl,
      deadLetterQueueUrl,
    });
    const body = `{"type":"report","pad":"${'p'.repeat(262_144 - 200)}"}`;
    // Act
    await settlement.deadLetter(
      {
        messageId: 'big-1',
        receiptHandle: 'unused',
        body,
        groupId: 'report:big',
        receiveCount: 1,
        firstReceivedAtMs: Date.now(),
      },
      { kind: 'malformed', reason: 'oversize: the body is larger than 65536 bytes' },
    );
    // Assess
    const [copy] = await until(async () => {
      const messages = await receiveAll(deadLetterQueueUrl);
      return messages.length > 0 ? messages : undefined;
    });
    expect(body.startsWith(copy?.Body ?? 'missing')).toBe(true);
    expect(copy?.Body?.length).toBeLessThan(body.length);
    expect(copy?.MessageAttributes?.['mesh.bodyBytes']?.StringValue).toBe(String(Buffer.byteLength(body)));
    expect(copy?.MessageAttributes?.['mesh.bodySha256']?.StringValue).toBe(
      createHash('sha256').update(body).digest('hex'),
    );
    expect(copy?.MessageAttributes?.['mesh.deadLetter']?.StringValue).toBe('malformed');
  });
});

describe('a report whose free text holds characters SQS refuses', () => {
  it('is queued, and read back as the host sent it', async () => {
    // Prepare: a queue of its own; a step with U+FFFE (refused by SQS), an emoji (refused by fauxqs), an escape.
    const name = `${config.controlQueueUrl.split('/').pop()?.replace('.fifo', '')}-text.fifo`;
    const created = await sqs.send(
      new CreateQueueCommand({
        QueueName: name,
        Attributes: { FifoQueue: 'true', ContentBasedDeduplication: 'true' },
      }),
    );
    const sender = new SqsControlSender({ client: sqs, queueUrl: created.QueueUrl ?? '' });
    const step = 'apply: \ufffe \u{1f94f} \u001b[31mfailed\u001b[0m';
    const report = {
      node: 'text',
      sequence: 1,
      state: 'failed' as const,
      revision: 1,
      step,
      sentAt: new Date().toISOString(),
    };
    // Act
    const queued = await sender.send([{ message: envelope('report', report) }]);
    // Assess
    const [received] = await until(async () => {
      const messages = await receiveAll(created.QueueUrl ?? '');
      return messages.length > 0 ? messages : undefined;
    });
    expect(queued).toHaveLength(1);
    expect(parseControlMessage(received?.Body ?? '')).toMatchObject({
      ok: true,
      message: { body: { step } },
    });
  });
});

describe('the consumer on the local event source, against fauxqs and DynamoDB Local', () => {
  it('puts a malformed message in the dead-letter queue with its reason while the next of its group is processed', async () => {
    const { deps } = consumerDeps();
    await sentNode('mal');
    const source = running(deps);
    try {
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: config.controlQueueUrl,
          MessageGroupId: 'report:mal',
          MessageBody: '{"type":',
        }),
      );
      const next = envelope('report', {
        node: 'mal',
        sequence: 1,
        state: 'applied',
        revision: 1,
        sentAt: new Date().toISOString(),
      });
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: config.controlQueueUrl,
          MessageGroupId: next.subject,
          MessageBody: JSON.stringify(next),
        }),
      );
      const reports = new DynamoDBReportStore(audited(documentClient(dynamodb), config.inventoryTable));
      await until(async () => {
        try {
          await reports.recordReport({ ...next.body, sequence: 1 }, timesNow());
          return undefined;
        } catch (error) {
          return error instanceof StaleReportError ? true : undefined;
        }
      });
      const [dead] = await until(async () => {
        const messages = await receiveAll(config.deadLetterQueueUrl);
        return messages.length > 0 ? messages : undefined;
      });
      expect(dead?.Body).toBe('{"type":');
      expect(dead?.MessageAttributes?.['mesh.deadLetter']?.StringValue).toBe('malformed');
      expect(dead?.MessageAttributes?.['mesh.reason']?.StringValue).toMatch(/^bad JSON/);
    } finally {
      await source.stop();
    }
  });

  it('holds a report while the store is away and, past a short bound, really lets it go to the dead-letter queue', async () => {
    // Prepare: a store nobody listens on, and a bound of three seconds.
    const closedPort = await freePort();
    const unreachable = makeDynamoDBClient(
      { region },
      { endpoint: `http://127.0.0.1:${closedPort}`, maxAttempts: 1 },
    );
    const { deps, log, lost } = consumerDeps({
      reports: new DynamoDBReportStore(audited(documentClient(unreachable), config.inventoryTable)),
      holdPolicy: { backoffSeconds: [1], boundSeconds: 3 },
    });
    const source = running(deps);
    const message = envelope('report', {
      node: 'gone',
      sequence: 1,
      state: 'applied',
      revision: 1,
      sentAt: new Date().toISOString(),
    });
    try {
      // Act
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: config.controlQueueUrl,
          MessageGroupId: message.subject,
          MessageBody: JSON.stringify(message),
        }),
      );
      const dead = await until(async () => {
        const messages = await receiveAll(config.deadLetterQueueUrl);
        return messages.find(
          (candidate) => candidate.MessageAttributes?.['mesh.subject']?.StringValue === 'report:gone',
        );
      }, 30_000);
      // Assess
      expect(dead.MessageAttributes?.['mesh.deadLetter']?.StringValue).toBe('lost');
      expect(dead.MessageAttributes?.['mesh.reason']?.StringValue).toMatch(/^recording a report/);
      expect(
        log.lines.filter((line) => line.message.startsWith('held report report:gone')).length,
      ).toBeGreaterThanOrEqual(2);
      expect(log.lines.map((line) => line.message)).toContainEqual(
        expect.stringMatching(/^lost report report:gone after [3-9] s: recording a report/),
      );
      expect(lost).toEqual(['report']);
    } finally {
      await source.stop();
      unreachable.destroy();
    }
    await sleep(1_200);
    expect(
      (await receiveAll(config.controlQueueUrl, 1)).filter(
        (m) => m.Attributes?.MessageGroupId === 'report:gone',
      ),
    ).toEqual([]);
  });

  it('leaves what it held on the queue when it stops', async () => {
    const closedPort = await freePort();
    const unreachable = makeDynamoDBClient(
      { region },
      { endpoint: `http://127.0.0.1:${closedPort}`, maxAttempts: 1 },
    );
    const { deps, log } = consumerDeps({
      builds: new DynamoDBBuildStore(audited(documentClient(unreachable), config.inventoryTable)),
      holdPolicy: { backoffSeconds: [1], boundSeconds: 120 },
    });
    const source = running(deps);
    const message = envelope('build', {
      id: 'kept-1',
      module: 'kept',
      version: '1',
      result: 'succeeded',
      finishedAt: new Date().toISOString(),
    });
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: config.controlQueueUrl,
        MessageGroupId: message.subject,
        MessageBody: JSON.stringify(message),
      }),
    );
    await until(async () =>
      log.lines.some((line) => line.message.startsWith('held build build:kept-1')) ? true : undefined,
    );
    await source.stop();
    unreachable.destroy();
    const back = await until(async () => {
      const messages = await receiveAll(config.controlQueueUrl);
      return messages.find((candidate) => candidate.Attributes?.MessageGroupId === 'build:kept-1');
    }, 10_000);
    expect(JSON.parse(back.Body ?? '{}')).toMatchObject({ subject: 'build:kept-1' });
  });
});

describe('the local event source in a process that stalls', () => {
  it('does not give up a receive the queue answered during the stall, which would hide the message for the visibility timeout', async () => {
    // The stack's control queue (a queue of the test's own would be no queue of the stack to the
    // rehearsal, which judges the consumer's calls): its visibility timeout (180 s) is far past
    // the wait below, so a receive given up during the stall would hide the message past it.
    const queueUrl = config.controlQueueUrl;
    const pollers = makePollerSQSClient({ region });
    let handledAt: number | undefined;
    let sentAt = 0;
    let stalled = false;
    // When a receive goes out, a message is sent that shows while it waits, and the process then
    // stalls past the client's request timeout of other clients (3 s), as a loaded machine's does:
    // the queue answers the receive with the message while nothing here can read the answer.
    pollers.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'ReceiveMessageCommand' && !stalled) {
          stalled = true;
          setTimeout(async () => {
            await sqs.send(
              new SendMessageCommand({
                QueueUrl: queueUrl,
                MessageGroupId: 'stall',
                MessageDeduplicationId: `stall-${Date.now()}`,
                MessageBody: 'stalled',
              }),
            );
            sentAt = Date.now();
            const until = sentAt + 4_000;
            while (Date.now() < until) {
              // the stall: the event loop turns no more until it ends
            }
          }, 50);
        }
        return next(args);
      },
      { step: 'finalizeRequest', name: 'stallOnce' },
    );
    const source = startEventSource({
      queueUrl: queueUrl as string,
      sqs: pollers,
      handler: async (event) => {
        if (event.Records.some((record) => record.body === 'stalled')) handledAt ??= Date.now();
        return { batchItemFailures: [] };
      },
      pollers: 1,
      waitTimeSeconds: 2,
    });
    try {
      await until(async () => (handledAt === undefined ? undefined : true), 25_000).catch(() => undefined);
    } finally {
      await source.stop();
      pollers.destroy();
    }

    expect(stalled).toBe(true);
    // Handled once the stall was over, not 30 s later when the queue showed it again.
    expect(handledAt, 'the message was not handled within 25 s').toBeDefined();
    expect((handledAt as number) - sentAt).toBeLessThan(12_000);
  });
});

describe('builds, catch-up and upgrades through the real queue, store and push flow', () => {
  it('a build announced by catch-up upgrades its carriers, which are sent the new version', async () => {
    // Prepare: a mesh of its own, two carriers of the module and one node without it, all sent.
    const own = await provisionTestResources('ctl-up');
    const parts = localPartsFor(own, { overrides: { log: new RecordingLog() }, flowRetryIntervalMs: 0 });
    for (const node of ['up-a', 'up-b', 'up-c']) await parts.meshService.addNode(node, {}, localActor());
    await parts.meshService.assign('up-a', 'queue-mod', null, localActor());
    await parts.meshService.assign('up-b', 'queue-mod', null, localActor());
    await parts.meshService.assign('up-c', 'other-mod', null, localActor());
    await parts.pushFlow.push({ behind: true });
    const revisionOf = async (node: string) => (await parts.deliveries.readDelivery(node))?.revision;
    const before = { c: await revisionOf('up-c') };
    const versionSent = async (node: string) =>
      ((await parts.deliveries.readDelivery(node))?.declaration as Declaration | undefined)?.modules.find(
        (module) => module.name === 'queue-mod',
      )?.version;
    const call = (
      handler: (event: APIGatewayProxyEvent, context: Context) => Promise<unknown>,
      body: unknown,
    ) =>
      handler(
        { body: JSON.stringify(body), isBase64Encoded: false, headers: {} } as APIGatewayProxyEvent,
        {} as Context,
      ) as Promise<{ statusCode: number; body: string }>;
    const source = startEventSource({
      queueUrl: own.controlQueueUrl,
      sqs,
      handler: controlConsumerHandler(parts),
      pollers: 2,
      waitTimeSeconds: 1,
    });
    try {
      // Act
      const built = await call(controlBuildHandler(parts), {
        module: 'queue-mod',
        version: '4.2',
        id: 'qm-1',
      });
      const bad = await call(controlUpgradeHandler(parts), { module: 'Bad Name', version: '1' });
      await until(async () =>
        (await parts.builds.latestSuccessfulBuilds()).some((build) => build.id === 'qm-1') ? true : undefined,
      );
      const caught = await call(controlCatchUpHandler(parts), {});
      await until(async () =>
        (await versionSent('up-a')) === '4.2' && (await versionSent('up-b')) === '4.2' ? true : undefined,
      );

      // Assess
      expect(built.statusCode).toBe(202);
      expect(JSON.parse(built.body).queued).toMatchObject({
        subject: 'build:qm-1',
        messageId: expect.any(String),
      });
      expect(bad.statusCode).toBe(400);
      expect(caught.statusCode).toBe(202);
      expect(await revisionOf('up-c')).toBe(before.c);
      expect((await parts.statusReader.status()).filter((node) => node.behind)).toEqual([]);
    } finally {
      await source.stop();
    }
  });
});
