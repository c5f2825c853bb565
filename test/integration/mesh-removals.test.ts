import { randomBytes } from 'node:crypto';
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { localPartsFor } from '../../lib/local/parts.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import { meshNodeRemoveHandler, meshUnassignHandler } from '../../lib/server/api/handlers/mesh-removals.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import type { Declaration } from '../../lib/server/core/mesh/declaration.ts';
import { MeshRaceError } from '../../lib/server/core/mesh/errors.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
import { addEnrolledNode } from '../support/enrolled-nodes.ts';
import { provisionTestResources } from '../support/resources.ts';

let config: MeshConfig;
let parts: Parts;

beforeAll(async () => {
  config = await provisionTestResources('remove');
  parts = localPartsFor(config, { flowRetryIntervalMs: 0 });
});

/** A broker providing amqp to an app on another node, both sent; names unique to the test. */
async function brokerAndApp() {
  const id = randomBytes(3).toString('hex');
  const broker = `broker-${id}`;
  const app = `app-${id}`;
  await addEnrolledNode(parts, broker);
  await addEnrolledNode(parts, app);
  await parts.meshService.assign(broker, 'rabbit', 'amqp', localActor());
  await parts.meshService.assign(app, 'web', null, localActor());
  await parts.meshService.consume(
    { node: app, module: 'web' },
    { node: broker, module: 'rabbit' },
    localActor(),
  );
  await parts.pushFlow.push({ node: app });
  return { broker, app };
}

const sent = async (node: string) => (await parts.deliveries.readDelivery(node))?.declaration as Declaration;
const behind = async () => (await parts.statusReader.status()).filter((s) => s.behind).map((s) => s.node);
const call = async (handler: (e: APIGatewayProxyEvent, c: never) => Promise<unknown>, event: object) => {
  const answer = (await handler(
    { headers: {}, body: null, ...event } as APIGatewayProxyEvent,
    {} as never,
  )) as {
    statusCode: number;
    body: string;
  };
  return { status: answer.statusCode, body: JSON.parse(answer.body) };
};

describe('removals on DynamoDB Local: one push leaves the mesh consistent', () => {
  it('unconsume withdraws the provision and the grant; one push of the consumer delivers both sides', async () => {
    const { broker, app } = await brokerAndApp();
    expect((await sent(broker)).grants).toHaveLength(1);

    const plan = await parts.meshService.unconsume(
      { node: app, module: 'web' },
      { node: broker, module: 'rabbit' },
      localActor(),
    );
    expect(plan.marked).toEqual([app, broker].sort());
    expect(await behind()).toEqual(expect.arrayContaining([app, broker]));
    const outcome = await parts.pushFlow.push({ node: app });

    expect(outcome.flushed.map((f) => f.node)).toEqual([broker]);
    expect((await sent(app)).provisions).toEqual([]);
    expect((await sent(broker)).grants).toEqual([]);
    expect(await behind()).not.toEqual(expect.arrayContaining([app]));
  });

  it('refuses to take away a provider others consume, naming them, and with cascade takes them too', async () => {
    const { broker, app } = await brokerAndApp();
    const unassign = meshUnassignHandler(parts);

    const refused = await call(unassign, { pathParameters: { node: broker, module: 'rabbit' } });
    const cascaded = await call(unassign, {
      pathParameters: { node: broker, module: 'rabbit' },
      queryStringParameters: { cascade: 'true' },
    });

    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({
      code: 'has_dependents',
      details: [`${app}/web -> ${broker}/rabbit`],
    });
    expect(cascaded.status).toBe(200);
    expect(cascaded.body).toEqual({
      removed: {
        node: null,
        modules: [{ node: broker, module: 'rabbit' }],
        relations: [`${app}/web -> ${broker}/rabbit`],
      },
      behind: [app, broker].sort(),
    });
    await parts.pushFlow.push({ node: broker });
    expect((await sent(app)).provisions).toEqual([]);
    expect((await sent(broker)).modules).toEqual([]);
  });

  it('removes a node with its consumers’ relations; its name can be added again as a new node', async () => {
    const { broker, app } = await brokerAndApp();
    const remove = meshNodeRemoveHandler(parts);

    const refused = await call(remove, { pathParameters: { node: broker } });
    const removed = await call(remove, {
      pathParameters: { node: broker },
      queryStringParameters: { cascade: 'true' },
    });
    const outcome = await parts.pushFlow.push({ node: app });
    await addEnrolledNode(parts, broker);
    const readded = await parts.pushFlow.push({ node: broker });

    expect(refused).toMatchObject({ status: 409, body: { error: { code: 'has_dependents' } } });
    expect(removed.body).toEqual({
      removed: {
        node: broker,
        modules: [{ node: broker, module: 'rabbit' }],
        relations: [`${app}/web -> ${broker}/rabbit`],
      },
      behind: [app],
    });
    expect(outcome.pushed?.node).toBe(app);
    expect((await sent(app)).provisions).toEqual([]);
    expect(readded.pushed).toEqual({ node: broker, revision: 1 });
    expect((await sent(broker)).grants).toEqual([]);
  });

  it('rotates a provision’s secret on both sides; one push delivers both', async () => {
    const { broker, app } = await brokerAndApp();
    const before = (await sent(app)).provisions[0]?.fingerprint;

    await parts.meshService.rotate(
      { node: app, module: 'web' },
      { node: broker, module: 'rabbit' },
      localActor(),
    );
    const outcome = await parts.pushFlow.push({ node: app });

    const after = (await sent(app)).provisions[0]?.fingerprint;
    expect(outcome.flushed.map((f) => f.node)).toEqual([broker]);
    expect(after).not.toBe(before);
    expect((await sent(broker)).grants[0]?.fingerprint).toBe(after);
  });

  it('fails whole, changing nothing, when a consumer of the provider comes in between its read and its write', async () => {
    const { broker } = await brokerAndApp();
    const late = `late-${randomBytes(3).toString('hex')}`;
    await addEnrolledNode(parts, late);
    await parts.meshService.assign(late, 'worker', null, localActor());
    const client = makeDynamoDBClient(config);
    // The removal's transaction waits for a consume made by someone else, then goes on.
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'TransactWriteItemsCommand')
          await parts.meshService.consume(
            { node: late, module: 'worker' },
            { node: broker, module: 'rabbit' },
            localActor(),
          );
        return next(args);
      },
      { step: 'initialize', name: 'aConsumeComesIn' },
    );
    const racing = localPartsFor(config, { clients: { dynamodb: client } });
    const itemsBefore = await scanCount();

    const attempt = racing.meshService.unassign(broker, 'rabbit', true, localActor());

    await expect(attempt).rejects.toBeInstanceOf(MeshRaceError);
    // Only the consume's two items (its relation and the provider-side entry) are new, and its audit record.
    expect(await scanCount()).toBe(itemsBefore + 3);
    const provider = await parts.pushStore.readNode(broker);
    expect(provider?.assignments.map((a) => a.module)).toEqual(['rabbit']);
    expect(provider?.dependents.map((d) => d.consumerNode)).toContain(late);
  });
});

async function scanCount(): Promise<number> {
  const client = makeDynamoDBClient(config);
  let count = 0;
  let start: Record<string, never> | undefined;
  do {
    const page = await client.send(
      new ScanCommand({
        TableName: config.inventoryTable,
        Select: 'COUNT',
        ConsistentRead: true,
        ExclusiveStartKey: start,
      }),
    );
    count += page.Count ?? 0;
    start = page.LastEvaluatedKey as typeof start;
  } while (start);
  client.destroy();
  return count;
}
