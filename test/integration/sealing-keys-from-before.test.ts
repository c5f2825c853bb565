import { DeleteCommand, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import type { NodeKeys } from '../../lib/clients/host/keys.ts';
import { startLocalRuntime } from '../../lib/local/local-runtime.ts';
import { localPartsFor } from '../../lib/local/parts.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import { enrolmentItemKey, identityKeyItemKey } from '../../lib/server/adapters/dynamodb/keys.ts';
import { upgradeDoneKey } from '../../lib/server/adapters/mesh/sealing-keys-from-before.ts';
import { envelope } from '../../lib/server/core/control/messages.ts';
import { settleMessage } from '../../lib/server/core/control/settle.ts';
import type { Declaration } from '../../lib/server/core/mesh/declaration.ts';
import { recordSealingKeysFromBefore } from '../../lib/server/core/sealing/keys-from-before.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
import { addEnrolledNode, openedBy, relate, secretsOf } from '../support/enrolled-nodes.ts';
import { provisionTestResources } from '../support/resources.ts';

/**
 * A host enrolled before the enrolment kept its sealing key on the inventory's `enrolment` item:
 * its relations wait; the one-shot upgrade copies the key its enrolment stored in the identity
 * table, and the `enrolled:<node>` follow-up mints and delivers both sides.
 */
let config: MeshConfig;
let parts: Parts;
const dynamodb = makeDynamoDBClient({ region: process.env.AWS_REGION ?? 'us-east-1' });

beforeAll(async () => {
  config = await provisionTestResources('keys-before', {});
  parts = localPartsFor(config, { flowRetryIntervalMs: 0 });
});

/**
 * Enrolled as before the spend kept a sealing key: the enrolment item names the signing key only,
 * and, as in a store from then, nothing says the upgrade went through the enrolments.
 */
async function enrolledTheOldWay(
  node: string,
  tableName = config.inventoryTable,
): Promise<NodeKeys | undefined> {
  const keys = tableName === config.inventoryTable ? await addEnrolledNode(parts, node) : undefined;
  await dynamodb.send(
    new UpdateCommand({
      TableName: tableName,
      Key: enrolmentItemKey(node),
      UpdateExpression: 'REMOVE sealingKey',
    }),
  );
  await dynamodb.send(new DeleteCommand({ TableName: tableName, Key: upgradeDoneKey }));
  return keys;
}

const enrolmentOf = async (node: string) =>
  (await dynamodb.send(new GetCommand({ TableName: config.inventoryTable, Key: enrolmentItemKey(node) })))
    .Item;

const declarationOf = async (node: string) =>
  (await parts.deliveries.readDelivery(node))?.declaration as Declaration | undefined;

const secretsOpenedBy = async (node: string, keys: NodeKeys) => secretsOf(await openedBy(parts, node, keys));

/** What the runtime does: the upgrade, each node announced as `enrolled:<node>` and taken by the consumer. */
const upgrade = () =>
  recordSealingKeysFromBefore({
    store: parts.sealingKeysFromBefore,
    announce: async (node) => {
      await settleMessage(envelope('enrolled', { node }), `before-${node}`, parts.consumer);
    },
  });

describe('hosts enrolled before the enrolment kept a sealing key', () => {
  it('get the key their enrolment stored, and their waiting relations are minted on both sides', {
    timeout: 120_000,
  }, async () => {
    const web = await addEnrolledNode(parts, 'web');
    const broker = (await enrolledTheOldWay('broker')) as NodeKeys;
    await relate(parts, { node: 'web', module: 'app' }, { node: 'broker', module: 'mq', kind: 'amqp' });
    await parts.pushFlow.push({ node: 'web' });
    expect((await declarationOf('web'))?.waiting).toEqual([
      { module: 'app', provider: { node: 'broker', module: 'mq', kind: 'amqp' }, waitingFor: ['broker'] },
    ]);

    const outcome = await upgrade();

    expect(outcome).toEqual({ recorded: ['broker'], keyless: [], moved: [] });
    expect((await enrolmentOf('broker'))?.sealingKey).toEqual(broker.sealing.publicJwk);
    expect((await declarationOf('web'))?.waiting).toEqual([]);
    const [webSecret] = await secretsOpenedBy('web', web);
    expect(webSecret).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(await secretsOpenedBy('broker', broker)).toEqual([webSecret]);
    // it went through every enrolment: a second run reads that, and finds nothing to do
    const done = await dynamodb.send(
      new GetCommand({ TableName: config.inventoryTable, Key: upgradeDoneKey }),
    );
    expect(done.Item?.doneAt).toEqual(expect.any(String));
    expect(await upgrade()).toEqual({ recorded: [], keyless: [], moved: [] });
  });

  it('leaves a node whose identity stored no sealing key, and one whose enrolment moved, as they are', {
    timeout: 60_000,
  }, async () => {
    await enrolledTheOldWay('keyless');
    const { thumbprint } = (await enrolmentOf('keyless')) as { thumbprint: string };
    await dynamodb.send(
      new UpdateCommand({
        TableName: config.identityTable,
        Key: identityKeyItemKey('keyless', thumbprint),
        UpdateExpression: 'REMOVE sealingKey',
      }),
    );
    const moved = (await enrolledTheOldWay('moved')) as NodeKeys;

    expect(
      await parts.sealingKeysFromBefore.recordSealingKey(
        'moved',
        'another-thumbprint',
        moved.sealing.publicJwk as never,
      ),
    ).toBe(false);
    expect((await enrolmentOf('moved'))?.sealingKey).toBeUndefined();
    expect(await upgrade()).toEqual({ recorded: ['moved'], keyless: ['keyless'], moved: [] });
    expect((await enrolmentOf('keyless'))?.sealingKey).toBeUndefined();
  });
});

const sentTo = async (from: Pick<Parts, 'deliveries'>, node: string) =>
  (await from.deliveries.readDelivery(node))?.declaration as Declaration | undefined;

describe('the local runtime', () => {
  it('records them at its start, and the control queue mints what waited', { timeout: 240_000 }, async () => {
    const prefix = `keys-before-runtime-${Date.now()}`;
    const start = (said: string[]) =>
      startLocalRuntime({
        port: 0,
        mqttPort: 0,
        given: inject('endpoints'),
        resourcePrefix: prefix,
        logLevel: 'SILENT',
        onProgress: (line) => said.push(line),
      });
    const first = await start([]);
    const older = first.parts;
    try {
      await addEnrolledNode(older, 'app');
      await addEnrolledNode(older, 'queue');
      await enrolledTheOldWay('queue', first.config.inventoryTable);
      await relate(older, { node: 'app', module: 'web' }, { node: 'queue', module: 'mq', kind: 'amqp' });
      await older.pushFlow.push({ node: 'app' });
      expect((await sentTo(older, 'app'))?.waiting.map((w) => w.waitingFor)).toEqual([['queue']]);
    } finally {
      await first.stop();
    }

    const said: string[] = [];
    const second = await start(said);
    try {
      expect(said).toContain(
        'sealing keys of 1 nodes enrolled before sealing recorded, their relations minted: queue',
      );
      await expect
        .poll(async () => (await sentTo(second.parts, 'app'))?.provisions.length, {
          timeout: 60_000,
          interval: 500,
        })
        .toBe(1);
      expect((await sentTo(second.parts, 'app'))?.waiting).toEqual([]);
    } finally {
      await second.stop();
    }
  });
});
