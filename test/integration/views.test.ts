import { request } from 'node:http';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startConsoleProxy } from '../../lib/clients/cli/console/proxy.ts';
import { ApiClient } from '../../lib/clients/http/api-client.ts';
import { type RunningApi, startLocalApi } from '../../lib/local/http-server.ts';
import { localPartsFor } from '../../lib/local/parts.ts';
import { DynamoDBAuditTrail } from '../../lib/server/adapters/audit/audit-trail.ts';
import { makeDynamoDBClient, makeSQSClient } from '../../lib/server/adapters/aws-clients.ts';
import { DynamoDBDeadLetterLog } from '../../lib/server/adapters/control/dead-letter-log.ts';
import { documentClient } from '../../lib/server/adapters/dynamodb/requests.ts';
import { DynamoDBPushRecords } from '../../lib/server/adapters/push/push-records.ts';
import type { DeadLetterNote } from '../../lib/server/core/control/dead-letter-notes.ts';
import type { PushOutcome } from '../../lib/server/core/push/ports.ts';
import { RecordedPushFlow } from '../../lib/server/core/push/records.ts';
import type { ListedNode, MeshGraph, NodeDetails } from '../../lib/server/core/views/views.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import { RecordingLog } from '../support/control-fakes.ts';
import { lagIndexes } from '../support/lagging-indexes.ts';
import { provisionTestResources } from '../support/resources.ts';
import { enrolInStore } from '../support/sealing.ts';
import { presenterKeys } from './enrol-fixtures.ts';

let config: MeshConfig;
let api: RunningApi;
let client: ApiClient;
let documents: DynamoDBDocumentClient;
const region = process.env.AWS_REGION ?? 'us-east-1';

beforeAll(async () => {
  config = await provisionTestResources('views');
  documents = documentClient(makeDynamoDBClient(config));
  api = await startLocalApi({ port: 0, parts: localPartsFor(config) });
  client = new ApiClient(api.url);
});

afterAll(async () => {
  await api?.stop();
});

const get = <T>(path: string) => client.call<T>('GET', path);

describe('a node seen both ways', () => {
  it('shows what it consumes and who consumes from it, pushed or not, with secrets hidden', async () => {
    for (const node of ['broker', 'web', 'worker']) {
      await client.call('POST', '/nodes', { node });
      await enrolInStore(documents, config.inventoryTable, node);
    }
    await client.call('PUT', '/nodes/broker/modules/rabbit', { provides: 'amqp' });
    await client.call('PUT', '/nodes/web/modules/app', {});
    await client.call('PUT', '/nodes/worker/modules/jobs', {});
    await client.call('POST', '/nodes/web/modules/app/consumes', {
      provider: { node: 'broker', module: 'rabbit' },
    });
    await client.call('POST', '/push', { node: 'web' });
    await client.call('POST', '/nodes/worker/modules/jobs/consumes', {
      provider: { node: 'broker', module: 'rabbit' },
    });

    const broker = await get<NodeDetails>('/nodes/broker');
    const web = await get<NodeDetails>('/nodes/web');

    expect(broker.consumedBy).toEqual([
      {
        consumer: { node: 'web', module: 'app' },
        provider: { node: 'broker', module: 'rabbit' },
        kind: 'amqp',
        minted: true,
      },
      {
        consumer: { node: 'worker', module: 'jobs' },
        provider: { node: 'broker', module: 'rabbit' },
        kind: 'amqp',
        minted: false,
      },
    ]);
    expect(broker).toMatchObject({
      consumes: [],
      behind: false,
      sentRevision: 1,
      modules: [{ module: 'rabbit', provides: 'amqp' }],
    });
    expect(web).toMatchObject({
      consumes: [{ provider: { node: 'broker', module: 'rabbit' }, kind: 'amqp', minted: true }],
      consumedBy: [],
      sentRevision: 1,
      behind: false,
      declaration: {
        provisions: [{ resource: 'web_app', fingerprint: expect.stringMatching(/^hmac-sha256:/) }],
      },
    });
    expect(JSON.stringify(web.declaration)).not.toContain('"secret"');
    expect((await get<NodeDetails>('/nodes/worker')).behind).toBe(true);
  });

  it('lists every node with its relations each way, and the graph with each relation once', async () => {
    const { nodes } = await get<{ nodes: ListedNode[] }>('/nodes');
    const graph = await get<MeshGraph>('/graph');
    expect(nodes.map((n) => [n.node, n.relations])).toEqual([
      ['broker', { consumes: 0, consumedBy: 2 }],
      ['web', { consumes: 1, consumedBy: 0 }],
      ['worker', { consumes: 1, consumedBy: 0 }],
    ]);
    expect(graph.edges.map((e) => `${e.consumer.node}>${e.provider.node}:${e.minted}`)).toEqual([
      'web>broker:true',
      'worker>broker:false',
    ]);
    expect(graph.nodes.map((n) => n.node)).toEqual(['broker', 'web', 'worker']);
  });

  it('shows the token by state and the enrolled key by its thumbprint, never a secret', async () => {
    await client.call('POST', '/nodes', { node: 'host1' });
    const issued = await client.call<{ token: string; tokenId: string }>('POST', '/nodes/host1/token', {});
    const before = await client.send('GET', '/nodes/host1');
    const enrolled = await client.call<{ thumbprint: string }>('POST', '/enrol', {
      node: 'host1',
      token: issued.token,
      keys: await presenterKeys(),
    });
    const after = await get<NodeDetails>('/nodes/host1');

    expect((before.body as NodeDetails).token).toMatchObject({ state: 'issued', tokenId: issued.tokenId });
    const raw = JSON.stringify(before.body);
    expect(raw).not.toContain(issued.token.split('_')[2]);
    expect(raw).not.toContain('secretHash');
    expect(after).toMatchObject({
      enrolled: true,
      thumbprint: enrolled.thumbprint,
      token: { state: 'spent' },
    });
  });

  it('answers 404 for a node that is not in the mesh', async () => {
    const answer = await client.send('GET', '/nodes/ghost');
    expect(answer.status).toBe(404);
    expect(answer.body).toEqual({ error: { code: 'node_not_found', message: 'no node named ghost' } });
  });

  it('sees a node added a moment ago, though the index has not caught up', async () => {
    // Every index read answers stale, as gsi1 may on AWS (the first time: nothing at all).
    const dynamodb = makeDynamoDBClient({ region });
    const lag = lagIndexes(dynamodb);
    const lagging = await startLocalApi({ port: 0, parts: localPartsFor(config, { clients: { dynamodb } }) });
    try {
      await client.call('POST', '/nodes', { node: 'fresh' });
      const graph = await new ApiClient(lagging.url).call<MeshGraph>('GET', '/graph');
      expect(graph.nodes.map((n) => n.node)).toContain('fresh');
      expect(lag.staleReads()).toBeGreaterThan(0);
    } finally {
      await lagging.stop();
    }
  });
});

describe('the record of pushes', () => {
  it('lists the pushes newest first, each with who asked and what it sent', async () => {
    await client.call('POST', '/push', { behind: true });
    const { pushes } = await get<{ pushes: Array<Record<string, unknown>> }>('/pushes?limit=2');
    expect(pushes).toHaveLength(2);
    expect(pushes[0]).toMatchObject({
      state: 'done',
      requestedBy: 'local',
      request: { behind: true, node: null },
      outcome: 'consistent',
    });
    expect(pushes[1]).toMatchObject({ request: { node: 'web' }, pushed: { node: 'web', revision: 1 } });
    expect(String(pushes[0]?.id) > String(pushes[1]?.id)).toBe(true);
    expect(await get(`/pushes/${pushes[1]?.id}`)).toEqual(pushes[1]);
  });

  it('can be read, strongly, while the push runs', async () => {
    const where = {
      client: documentClient(makeDynamoDBClient({ region })),
      tableName: config.inventoryTable,
    };
    const records = new DynamoDBPushRecords({
      ...where,
      audit: new DynamoDBAuditTrail({ ...where, retentionDays: 365 }),
    });
    let answer: (outcome: PushOutcome) => void = () => {};
    const flow = new RecordedPushFlow({
      flow: { push: () => new Promise<PushOutcome>((resolve) => (answer = resolve)) },
      records,
      log: new RecordingLog(),
      now: () => new Date(),
    });
    const id = '20990101T000000000Z-abcdef';
    const pushing = flow.push(
      { node: 'web' },
      { requestedBy: 'arn:aws:sts::1:assumed-role/ops/ana', pushId: id },
    );
    // The record is written as the push starts: wait for it rather than for a fixed time.
    for (
      let waited = 0;
      (await client.send('GET', `/pushes/${id}`)).status === 404 && waited < 10_000;
      waited += 50
    )
      await new Promise((resolve) => setTimeout(resolve, 50));
    const running = await get<{ state: string }>(`/pushes/${id}`);
    const newest = (await get<{ pushes: Array<{ id: string }> }>('/pushes?limit=1')).pushes[0];
    answer({ pushed: { node: 'web', revision: 1 }, flushed: [], rounds: 0, behind: [] });
    await pushing;
    expect(running).toMatchObject({
      state: 'running',
      outcome: null,
      requestedBy: 'arn:aws:sts::1:assumed-role/ops/ana',
    });
    expect(newest?.id).toBe(id);
    expect(await get(`/pushes/${id}`)).toMatchObject({ state: 'done', outcome: 'consistent' });
  });

  it('refuses a malformed id or limit, and answers 404 for a push not kept', async () => {
    expect((await client.send('GET', '/pushes/nope')).status).toBe(400);
    expect((await client.send('GET', '/pushes?limit=0')).status).toBe(400);
    expect((await client.send('GET', '/pushes?limit=5&extra=1')).status).toBe(400);
    const missing = await client.send('GET', '/pushes/20000101T000000000Z-000000');
    expect(missing.status).toBe(404);
    expect((missing.body as { error: { code: string } }).error.code).toBe('push_not_found');
  });
});

describe('the dead-letter list', () => {
  it('lists what was noted, newest first, beside the queue’s own count, which receives nothing', async () => {
    const letters = new DynamoDBDeadLetterLog({
      client: documentClient(makeDynamoDBClient({ region })),
      tableName: config.inventoryTable,
    });
    const note = (messageId: string, firstReceivedAt: string): DeadLetterNote => ({
      messageId,
      kind: 'malformed',
      reason: 'bad JSON: the body is not valid JSON',
      type: null,
      subject: null,
      copied: true,
      receiveCount: 1,
      firstReceivedAt,
      notedAt: firstReceivedAt,
      body: '{',
      bodyBytes: 1,
    });
    await letters.note(note('m-old', '2026-07-01T00:00:00.000Z'));
    await letters.note(note('m-new', '2026-07-02T00:00:00.000Z'));
    await letters.note(note('m-new', '2026-07-02T00:00:00.000Z'));
    const sqs = makeSQSClient({ region });
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: config.deadLetterQueueUrl,
        MessageBody: '{',
        MessageGroupId: 'malformed',
      }),
    );
    sqs.destroy();

    const first = await get<{ letters: DeadLetterNote[]; queue: { approximateMessages: number } }>(
      '/dead-letters',
    );
    const again = await get<{ queue: { approximateMessages: number } }>('/dead-letters');

    expect(first.letters.map((l) => l.messageId)).toEqual(['m-new', 'm-old']);
    expect(first.queue.approximateMessages).toBe(1);
    expect(again.queue.approximateMessages).toBe(1);
  });
});

describe('mesh console for a deployed stack', () => {
  it('serves the pages and forwards only the console’s reads, signed, to the stack', async () => {
    const signed: string[] = [];
    const stack = new ApiClient(api.url, {
      signer: async (request) => {
        signed.push(`${request.method} ${request.url.pathname}`);
        return { ...request.headers };
      },
    });
    const proxy = await startConsoleProxy({
      port: 0,
      settings: { refreshSeconds: 30, source: api.url },
      forward: (path) => stack.send('GET', path),
    });
    try {
      const page = await fetch(`${proxy.url}/console`);
      const graph = await fetch(`${proxy.url}/graph`);
      const write = await fetch(`${proxy.url}/nodes`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"node":"evil"}',
      });
      const secrets = await fetch(`${proxy.url}/nodes/web/declaration`);
      const rebound = await statusWithHost(
        `${proxy.url}/graph`,
        `attacker.example:${new URL(proxy.url).port}`,
      );

      expect(page.status).toBe(200);
      expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
      expect(graph.status).toBe(200);
      expect(((await graph.json()) as MeshGraph).nodes.length).toBeGreaterThan(0);
      expect([write.status, secrets.status, rebound]).toEqual([405, 404, 403]);
      expect(signed).toEqual(['GET /graph']);
    } finally {
      await proxy.stop();
    }
  });
});

/** fetch will not send another Host; a page reached through DNS rebinding would. */
function statusWithHost(url: string, host: string): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    request(url, { headers: { host } }, (response) => {
      response.resume();
      resolve(response.statusCode);
    })
      .on('error', reject)
      .end();
  });
}

describe('a provider seen from its own side', () => {
  let ownConfig: MeshConfig;
  let ownApi: RunningApi;
  let own: ApiClient;
  beforeAll(async () => {
    ownConfig = await provisionTestResources('seeing-provider');
    ownApi = await startLocalApi({ port: 0, parts: localPartsFor(ownConfig) });
    own = new ApiClient(ownApi.url);
  });
  afterAll(async () => {
    await ownApi?.stop();
  });

  it('a provider names every relation to it after a push, the ones waiting for an enrolment too', async () => {
    await own.call('POST', '/nodes', { node: 'queue' });
    await enrolInStore(documents, ownConfig.inventoryTable, 'queue');
    await own.call('POST', '/nodes', { node: 'late' });
    await own.call('PUT', '/nodes/queue/modules/mq', { provides: 'amqp' });
    await own.call('PUT', '/nodes/late/modules/app', {});
    await own.call('POST', '/nodes/late/modules/app/consumes', {
      provider: { node: 'queue', module: 'mq' },
    });
    // pushed, so no node is marked: the relation waits for late's enrolment, nothing is minted
    await own.call('POST', '/push', { behind: true });

    const queue = await own.call<NodeDetails>('GET', '/nodes/queue');

    expect(queue.behind).toBe(false);
    expect(queue.consumedBy).toEqual([
      {
        consumer: { node: 'late', module: 'app' },
        provider: { node: 'queue', module: 'mq' },
        kind: 'amqp',
        minted: false,
      },
    ]);
  });
});
