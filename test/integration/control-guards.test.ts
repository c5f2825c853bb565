import { randomBytes } from 'node:crypto';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../lib/clients/common/exit-codes.ts';
import { type RunningApi, startLocalApi } from '../../lib/local/http-server.ts';
import { localPartsFor } from '../../lib/local/parts.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import { documentClient } from '../../lib/server/adapters/dynamodb/requests.ts';
import { controlConsumerHandler } from '../../lib/server/api/handlers/control-consumer.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { type ControlMessage, envelope } from '../../lib/server/core/control/messages.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
import { RecordingLog } from '../support/control-fakes.ts';
import { runMesh } from '../support/processes.ts';
import { provisionTestResources } from '../support/resources.ts';
import { sqsRecordOf } from '../support/sqs-records.ts';

/**
 * What a hostile or careless sender can no longer do to the store through the control queue
 * (docs/control-queue.md: a sequence's bound, build times, reports of nodes that exist), on DynamoDB Local and fauxqs: the consumer is handed records as
 * Lambda would hand them, the operator's routes are called through `mesh` itself.
 */
let config: MeshConfig;
let parts: Parts;
let api: RunningApi;
const client = makeDynamoDBClient({ region: 'us-east-1' });
const table = () => documentClient(client);

beforeAll(async () => {
  config = await provisionTestResources('guards');
  parts = localPartsFor(config, { overrides: { log: new RecordingLog() }, flowRetryIntervalMs: 0 });
  api = await startLocalApi({ port: 0, parts });
});
afterAll(async () => {
  await api?.stop();
  client.destroy();
});

const unique = (label: string) => `${label}-${randomBytes(3).toString('hex')}`;
let delivered = 0;

/** Hands the consumer one batch, as Lambda's event source would; answers the ids it gave back. */
async function deliver(...messages: ControlMessage[]): Promise<string[]> {
  const records = messages.map((message) => {
    delivered += 1;
    return sqsRecordOf(message, `guard-${delivered}`);
  });
  const answer = await controlConsumerHandler(parts)({ Records: records }, {} as Context);
  return answer.batchItemFailures.map((failure) => failure.itemIdentifier);
}

/** The dead-letter notes of one subject, newest first. */
const lettersOf = async (subject: string) =>
  (await parts.deadLetterNotes.list(100)).filter((letter) => letter.subject === subject);

const reportItem = async (node: string) =>
  (
    await table().send(
      new GetCommand({ TableName: config.inventoryTable, Key: { pk: `node#${node}`, sk: 'report' } }),
    )
  ).Item;

const report = (
  node: string,
  sequence: number,
  revision: number,
  state: 'applying' | 'applied' | 'failed' | 'heartbeat' = 'applied',
  queuedAt = new Date(),
) => envelope('report', { node, sequence, state, revision, sentAt: new Date().toISOString() }, queuedAt);

/** A node with one module, pushed once: it was sent revision 1. */
async function sentNode(label: string): Promise<string> {
  const node = unique(label);
  await parts.meshService.addNode(node, {}, localActor());
  await parts.meshService.assign(node, 'web', null, localActor());
  await parts.pushFlow.push({ node });
  return node;
}

async function mesh(...args: string[]) {
  const ran = await runMesh(api.url, args);
  const json = args.includes('--json') && ran.stdout.trim() ? JSON.parse(ran.stdout) : undefined;
  return { ...ran, json };
}

describe('a report sequence is bounded by the clock', () => {
  it('a report far ahead of the clock is dead-lettered as rejected, and the next real report is recorded', async () => {
    // Prepare
    const node = await sentNode('ahead');
    // Act
    const held = await deliver(report(node, 9e15, 1));
    const real = Date.now();
    await deliver(report(node, real, 1));
    // Assess
    expect(held).toEqual([]);
    expect(await reportItem(node)).toMatchObject({ sequence: real, appliedRevision: 1 });
    const [letter] = await lettersOf(`report:${node}`);
    expect(letter).toMatchObject({ kind: 'rejected', reason: expect.stringMatching(/ahead of the clock/) });
  });

  it('mesh report reset clears a report kept from before the bound, so the next real report is recorded', async () => {
    // Prepare: a poisoned report item, as a control plane without the bound recorded it.
    const node = await sentNode('reset');
    const poisoned = { pk: `node#${node}`, sk: 'report', sequence: 9e15, state: 'applied', revision: 1 };
    await table().send(
      new PutCommand({
        TableName: config.inventoryTable,
        Item: {
          ...poisoned,
          appliedRevision: 1,
          sentAt: new Date().toISOString(),
          heardAt: new Date().toISOString(),
        },
      }),
    );
    // Act
    const reset = await mesh('--json', 'report', 'reset', node);
    const again = await mesh('report', 'reset', node);
    const unknown = await mesh('report', 'reset', unique('nobody'));
    const real = Date.now();
    await deliver(report(node, real, 1));
    // Assess
    expect(reset.code, reset.output).toBe(ExitCode.ok);
    expect(reset.json).toMatchObject({ node, reset: { sequence: 9e15, state: 'applied', revision: 1 } });
    expect(again.code, again.output).toBe(ExitCode.ok);
    expect(again.stdout).toContain(`${node} has no report to reset`);
    expect(unknown.code, unknown.output).toBe(ExitCode.notFound);
    expect(await reportItem(node)).toMatchObject({ sequence: real });
  });
});

describe('reports only for nodes that exist, of revisions they were sent', () => {
  it('a report for a node that does not exist is rejected, and a node added later under its name inherits nothing', async () => {
    // Prepare
    const node = unique('ghost');
    // Act
    await deliver(report(node, Date.now(), 1));
    await parts.meshService.addNode(node, {}, localActor());
    // Assess
    expect(await reportItem(node)).toBeUndefined();
    expect((await parts.meshView.details(node))?.report).toBeNull();
    const [letter] = await lettersOf(`report:${node}`);
    expect(letter).toMatchObject({
      kind: 'rejected',
      reason: expect.stringMatching(`there is no node ${node}`),
    });
  });

  it('a report queued before its node was removed and added again is rejected', async () => {
    // Prepare: a report queued while the node's first life was still going on.
    const node = await sentNode('again');
    const queuedAt = new Date();
    await parts.meshService.removeNode(node, false, localActor());
    await new Promise((resolve) => setTimeout(resolve, 5));
    await parts.meshService.addNode(node, {}, localActor());
    await parts.meshService.assign(node, 'web', null, localActor());
    await parts.pushFlow.push({ node });
    // Act
    await deliver(report(node, Date.now(), 1, 'applied', queuedAt));
    // Assess
    expect(await reportItem(node)).toBeUndefined();
    const [letter] = await lettersOf(`report:${node}`);
    expect(letter).toMatchObject({
      kind: 'rejected',
      reason: expect.stringMatching(/before node .* was added/),
    });
  });

  it('a presence event from before the node was removed and added again is refused, and leaves nothing', async () => {
    // Prepare: the old host's connection, seen by the broker before the node's second life.
    const node = await sentNode('presence');
    const atMs = Date.now();
    await parts.meshService.removeNode(node, false, localActor());
    await new Promise((resolve) => setTimeout(resolve, 5));
    await parts.meshService.addNode(node, {}, localActor());
    // Act
    const recorded = parts.presence.recordPresence({ node, state: 'disconnected', atMs, version: 1 });
    // Assess
    await expect(recorded).rejects.toThrow(/before node .* was added/);
    expect((await parts.statusReader.status()).find((status) => status.node === node)).toMatchObject({
      online: null,
      lastHeard: null,
      appliedRevision: null,
      sentRevision: null,
      enrolled: false,
    });
  });

  it('a report of a revision never sent is rejected; the revision that was sent is recorded', async () => {
    // Prepare
    const node = await sentNode('unsent');
    const before = Date.now();
    // Act
    await deliver(report(node, before, 7));
    await deliver(report(node, before + 1, 1));
    // Assess
    expect(await reportItem(node)).toMatchObject({ sequence: before + 1, appliedRevision: 1 });
    const [letter] = await lettersOf(`report:${node}`);
    expect(letter).toMatchObject({
      kind: 'rejected',
      reason: expect.stringMatching(/was sent revision 1 at most/),
    });
  });
});

describe('builds: ordered by when the control plane received them, bounded, retractable', () => {
  const build = (module: string, version: string, receivedAt: Date, finishedAt = receivedAt, id?: string) =>
    envelope(
      'build',
      {
        id: id ?? `${module}-${version}-${randomBytes(2).toString('hex')}`,
        module,
        version,
        result: 'succeeded',
        finishedAt: finishedAt.toISOString(),
      },
      receivedAt,
    );
  const latestOf = async (module: string) =>
    (await parts.builds.latestSuccessfulBuilds()).find((entry) => entry.module === module)?.version;

  it('a latest build from year 9999 gives way to the next real one, and the build received later wins', async () => {
    // Prepare: the module's latest as a control plane ordering by finishedAt kept it.
    const module = unique('poisoned');
    await table().send(
      new PutCommand({
        TableName: config.inventoryTable,
        Item: {
          pk: 'builds#latest',
          sk: module,
          id: 'from-the-future',
          module,
          version: '0.0.1',
          result: 'succeeded',
          finishedAt: '9999-12-31T00:00:00.000Z',
          recordedAt: new Date().toISOString(),
        },
      }),
    );
    const now = Date.now();
    // Act
    await deliver(build(module, '1.0', new Date(now - 2000)));
    const afterFirst = await latestOf(module);
    await deliver(build(module, '1.1', new Date(now - 1000), new Date(now - 60_000)));
    // Assess
    expect(afterFirst).toBe('1.0');
    expect(await latestOf(module)).toBe('1.1');
  });

  it('a build that finished in year 9999, or decades ago, is rejected and never becomes the latest', async () => {
    // Prepare
    const module = unique('bounded');
    await deliver(build(module, '1.0', new Date()));
    // Act
    await deliver(build(module, '6.6', new Date(), new Date('9999-01-01T00:00:00Z')));
    await deliver(build(module, '0.1', new Date(), new Date('1990-01-01T00:00:00Z')));
    // Assess
    expect(await latestOf(module)).toBe('1.0');
    const letters = (await parts.deadLetterNotes.list(100)).filter((letter) => letter.body.includes(module));
    expect(letters.map((letter) => letter.kind)).toEqual(['rejected', 'rejected']);
    expect(letters.map((letter) => letter.reason)).toEqual([
      expect.stringMatching(/finished .* before it was received/),
      expect.stringMatching(/finished .* after it was received/),
    ]);
  });

  it('mesh build retract: the build before it is the latest again, and a repeat of the retracted build does not bring it back', async () => {
    // Prepare
    const module = unique('retract');
    const now = Date.now();
    const bad = build(module, '1.5', new Date(now - 1000));
    await deliver(build(module, '1.4', new Date(now - 2000)));
    await deliver(bad);
    // Act
    const retracted = await mesh('--json', 'build', 'retract', module, '1.5');
    const afterRetract = await latestOf(module);
    await deliver(bad);
    await deliver(build(module, '1.5', new Date()));
    const afterRepeats = await latestOf(module);
    const again = await mesh('build', 'retract', module, '1.5');
    const never = await mesh('--json', 'build', 'retract', module, '9.9');
    // Assess
    expect(retracted.code, retracted.output).toBe(ExitCode.ok);
    expect(retracted.json).toMatchObject({
      retracted: { module, version: '1.5', builds: [bad.body.id], already: false },
      latest: { module, version: '1.4' },
    });
    expect(afterRetract).toBe('1.4');
    expect(afterRepeats).toBe('1.4');
    expect(again.code, again.output).toBe(ExitCode.ok);
    expect(again.stdout).toContain(`${module} 1.5 was already retracted`);
    expect(never.code, never.output).toBe(ExitCode.notFound);
    expect(never.json).toMatchObject({ error: { code: 'build_not_found' } });
  });
});
