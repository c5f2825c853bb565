import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { hostApiClient } from '../../lib/clients/host/host-api-client.ts';
import { signingKeyOf } from '../../lib/clients/host/keys.ts';
import { startLocalApi } from '../../lib/local/http-server.ts';
import { localPartsFor } from '../../lib/local/parts.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import { inlineBytes, partsPartition } from '../../lib/server/adapters/dynamodb/declaration-parts.ts';
import { documentClient } from '../../lib/server/adapters/dynamodb/requests.ts';
import { DynamoDBDeliveryReader } from '../../lib/server/adapters/push/delivery-reader.ts';
import { DynamoDBPushStore } from '../../lib/server/adapters/push/push-store.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { composeAsMinted, type Declaration } from '../../lib/server/core/mesh/declaration.ts';
import type { SealingKey } from '../../lib/server/core/mesh/model.ts';
import { Pusher } from '../../lib/server/core/push/pusher.ts';
import { sealingKeyOf } from '../../lib/server/core/sealing/sealed-secret.ts';
import { StoreUnavailableError } from '../../lib/server/core/unavailable.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
import { addEnrolledNode } from '../support/enrolled-nodes.ts';
import { seedConsumers, seedingClient } from '../support/large-provider.ts';
import { provisionTestResources } from '../support/resources.ts';
import { allEnrolled, enrolInStore } from '../support/sealing.ts';

let config: MeshConfig;
let parts: Parts;
/** Each test seeds thousands of items: on a loaded machine DynamoDB Local takes minutes over them. */
const patience = 300_000;
const pusher = () => new Pusher({ store: parts.pushStore });
const setup = () => documentClient(makeDynamoDBClient(config));

beforeAll(async () => {
  config = await provisionTestResources('parts');
  parts = localPartsFor(config);
});

/** A provider node whose declaration is over one item: `consumers` grants of about 170 bytes each. */
async function largeProvider(
  node: string,
  consumers: number,
  first = 0,
  add = first === 0,
  providerKey?: SealingKey,
) {
  if (add) {
    await parts.meshService.addNode(node, {}, localActor());
    await enrolInStore(setup(), config.inventoryTable, node);
    await parts.meshService.assign(node, 'rabbit', 'amqp', localActor());
  }
  const seeding = seedingClient(config.endpoints?.dynamodb ?? process.env.AWS_ENDPOINT_URL_DYNAMODB);
  await seedConsumers(seeding, config.inventoryTable, { node, module: 'rabbit', kind: 'amqp' }, consumers, {
    first,
    consumerSide: false,
    ...(providerKey ? { providerKey } : {}),
  });
  seeding.destroy();
}

/** The sort keys of the node's parts, as the table holds them. */
async function partKeys(node: string): Promise<string[]> {
  const { Items } = await setup().send(
    new QueryCommand({
      TableName: config.inventoryTable,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': partsPartition(node) },
      ProjectionExpression: 'sk',
      ConsistentRead: true,
    }),
  );
  return (Items ?? []).map((item) => String(item.sk));
}

/** The partition key a request names (its Item's or its Key's), marshalled or not. */
function partitionOf(input: unknown): string {
  const { Item, Key } = input as { Item?: { pk?: unknown }; Key?: { pk?: unknown } };
  const pk = (Item ?? Key)?.pk;
  return typeof pk === 'string' ? pk : String((pk as { S?: string } | undefined)?.S ?? '');
}

/** A push store on a client of its own whose `fault` can fail a request before it is sent, as a store gone away would. */
function faultyStore(fault: (command: string, partition: string) => Error | undefined) {
  const client = makeDynamoDBClient(config);
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const error = fault(String(context.commandName), partitionOf(args.input));
      if (error) throw error;
      return next(args);
    },
    { step: 'initialize' },
  );
  return new DynamoDBPushStore({ client: documentClient(client), tableName: config.inventoryTable });
}

const connectionReset = () => Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });

describe('a declaration over one item, in parts, on DynamoDB Local', () => {
  it(
    'is sent in parts and read back whole with its ETag; the parts it replaced are removed',
    async () => {
      const node = 'parts-broker';
      await largeProvider(node, 2_500);
      const pushed = await pusher().sendNode(node);
      const first = await parts.deliveries.readDelivery(node);
      const snapshot = await parts.pushStore.readNode(node);
      const declaration = first?.declaration as Declaration;

      expect(pushed).toMatchObject({ revision: 1, sent: true });
      expect(declaration.grants).toHaveLength(2_500);
      expect(first?.etag).toBe(`"1-${snapshot?.sent?.digest}"`);
      expect(
        composeAsMinted(
          snapshot as NonNullable<typeof snapshot>,
          allEnrolled(snapshot as NonNullable<typeof snapshot>),
        ).digest,
      ).toBe(first?.digest);
      expect(JSON.stringify(declaration).length).toBeGreaterThan(inlineBytes);
      expect(await partKeys(node)).toHaveLength(snapshot?.sent?.parts ?? 0);
      expect(snapshot?.sent?.parts).toBeGreaterThan(1);
      // node show names the parts rather than answering the whole declaration, or none
      expect(await parts.meshView.details(node)).toMatchObject({
        sentRevision: 1,
        declaration: null,
        declarationParts: snapshot?.sent?.parts,
      });

      await largeProvider(node, 10, 2_500);
      await pusher().sendNode(node);
      const second = await parts.deliveries.readDelivery(node);
      const keys = await partKeys(node);
      expect(second?.revision).toBe(2);
      expect((second?.declaration as Declaration | undefined)?.grants).toHaveLength(2_510);
      expect(keys.every((key) => key.startsWith(`${'2'.padStart(10, '0')}#${second?.digest}#`))).toBe(true);

      // A host that has the ETag costs the head only: nothing of the parts is read.
      const known = await parts.deliveries.readDelivery(node, { known: (etag) => etag === second?.etag });
      expect(known).toMatchObject({ revision: 2, etag: second?.etag, declaration: undefined });
    },
    patience,
  );

  it(
    'a store gone away between the parts and the head leaves the declaration before it, whole; the push again sends it',
    async () => {
      const node = 'parts-outage';
      await largeProvider(node, 2_500);
      await pusher().sendNode(node);
      const before = await parts.deliveries.readDelivery(node);
      await largeProvider(node, 10, 2_500);

      let partsWritten = 0;
      const broken = new Pusher({
        store: faultyStore((command, partition) => {
          if (!command.startsWith('Put') || !partition.startsWith('declaration#')) return undefined;
          partsWritten += 1;
          return partsWritten > 1 ? connectionReset() : undefined;
        }),
      });
      const failed = await broken.sendNode(node).catch((error: unknown) => error);
      const during = await parts.deliveries.readDelivery(node);

      expect(failed).toBeInstanceOf(StoreUnavailableError);
      expect(during).toEqual(before);
      expect((during?.declaration as Declaration | undefined)?.grants).toHaveLength(2_500);

      const again = await pusher().sendNode(node);
      const after = await parts.deliveries.readDelivery(node);
      expect(again).toMatchObject({ revision: 2, sent: true });
      expect((after?.declaration as Declaration | undefined)?.grants).toHaveLength(2_510);
      expect(await partKeys(node)).toHaveLength((await parts.pushStore.readNode(node))?.sent?.parts ?? 0);
    },
    patience,
  );

  it(
    'a host that read the head just before a newer send moved it reads the newer one whole',
    async () => {
      const node = 'parts-reader';
      await largeProvider(node, 2_500);
      await pusher().sendNode(node);
      await largeProvider(node, 10, 2_500);

      // The first part read waits for a whole newer send, which removes the parts the head named.
      const client = makeDynamoDBClient(config);
      let partReads = 0;
      client.middlewareStack.add(
        (next, context) => async (args) => {
          const command = String(context.commandName);
          if (command.startsWith('Get') && partitionOf(args.input).startsWith('declaration#')) {
            partReads += 1;
            if (partReads === 1) await pusher().sendNode(node);
          }
          return next(args);
        },
        { step: 'initialize' },
      );
      const reader = new DynamoDBDeliveryReader({
        client: documentClient(client),
        tableName: config.inventoryTable,
      });
      const read = await reader.readDelivery(node);

      expect(read?.revision).toBe(2);
      expect((read?.declaration as Declaration | undefined)?.grants).toHaveLength(2_510);
      expect(read?.etag).toBe(`"2-${read?.digest}"`);
    },
    patience,
  );

  it(
    'a host fetches it whole through its own route with one ETag, and 304 with that ETag',
    async () => {
      const node = 'parts-host';
      const keys = await addEnrolledNode(parts, node);
      await parts.meshService.assign(node, 'rabbit', 'amqp', localActor());
      await largeProvider(node, 2_500, 0, false, sealingKeyOf(keys.sealing.publicJwk));
      await pusher().sendNode(node);
      const api = await startLocalApi({ port: 0, parts });
      try {
        const host = hostApiClient(api.url, signingKeyOf(node, keys), { timeoutMs: 60_000 });
        const fetched = await host.send('GET', `/hosts/${node}/declaration`);
        const etag = fetched.headers.get('etag') ?? '';
        const again = await host.send('GET', `/hosts/${node}/declaration`, undefined, {
          'if-none-match': etag,
        });

        expect(fetched.status).toBe(200);
        expect(etag).toBe(`"1-${(fetched.body as { digest: string }).digest}"`);
        expect((fetched.body as { declaration: Declaration }).declaration.grants).toHaveLength(2_500);
        expect(again.status).toBe(304);
      } finally {
        await api.stop();
      }
    },
    patience,
  );

  it(
    'a small declaration stays in its delivery item, with no parts',
    async () => {
      const node = 'parts-small';
      await largeProvider(node, 3);
      await pusher().sendNode(node);
      expect(await partKeys(node)).toEqual([]);
      expect((await parts.pushStore.readNode(node))?.sent?.parts).toBeUndefined();
      const sent = await parts.deliveries.readDelivery(node);
      expect((sent?.declaration as Declaration | undefined)?.grants).toHaveLength(3);
    },
    patience,
  );
});
