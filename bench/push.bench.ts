import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchWriteCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { localPartsFor } from '../lib/local/parts.ts';
import { makeDynamoDBClient } from '../lib/server/adapters/aws-clients.ts';
import {
  assignmentItem,
  carrierItem,
  consumedByItem,
  deliveryItem,
  grantItem,
  moduleKey,
  nodeItem,
  provisionItem,
  relationItem,
} from '../lib/server/adapters/dynamodb/mesh-items.ts';
import { documentClient, type Item } from '../lib/server/adapters/dynamodb/requests.ts';
import { pushesPartition } from '../lib/server/adapters/push/push-records.ts';
import { localActor } from '../lib/server/core/audit/record.ts';
import { mapLimit } from '../lib/server/core/map-limit.ts';
import { composeAsMinted, provisionName } from '../lib/server/core/mesh/declaration.ts';
import type { Assignment, NodeSnapshot, Provision, Relation } from '../lib/server/core/mesh/model.ts';
import { allEnrolled, enrolmentItemFor, seededProvision, testSealing } from '../test/support/sealing.ts';
import { benchEnvironment } from './support/environment.ts';
import { measuredBy } from './support/item-meter.ts';
import { median } from './support/stats.ts';
import type { BenchTable } from './support/table.ts';

/** Counts every DynamoDB request and sums the capacity our calls ask to be told about. */
function meter(client: DynamoDBClient) {
  const counts = { requests: 0, capacity: 0, recordWrites: 0 };
  client.middlewareStack.add(
    (next) => async (args) => {
      counts.requests += 1;
      if (writesPushRecord(args.input)) counts.recordWrites += 1;
      const result = await next(args);
      const consumed = (result.output as { ConsumedCapacity?: unknown }).ConsumedCapacity;
      for (const entry of [consumed ?? []].flat() as Array<{ CapacityUnits?: number }>) {
        counts.capacity += entry.CapacityUnits ?? 0;
      }
      return result;
    },
    { step: 'initialize', name: 'meshBenchMeter' },
  );
  return measuredBy(counts);
}

/** A write to the push records' partition (lib/server/adapters/push/push-records.ts), by its key as sent. */
function writesPushRecord(input: unknown): boolean {
  const { Key, Item } = input as { Key?: { pk?: unknown }; Item?: { pk?: unknown } };
  const pk = (Key ?? Item)?.pk;
  return pk === pushesPartition || (pk as { S?: string } | undefined)?.S === pushesPartition;
}

const moduleNames = ['base', 'web', 'worker'];
export const nodeName = (i: number) => `node-${String(i).padStart(5, '0')}`;

/**
 * A steady mesh: every node carries a few modules and was sent its current declaration; one in
 * ten nodes runs a broker, and about one in ten consumes a broker on another node.
 */
export function seedItems(size: number): Item[] {
  const items: Item[] = [];
  const createdAt = '2026-01-01T00:00:00.000Z';
  const brokers = Array.from({ length: Math.max(1, Math.floor(size / 10)) }, (_, i) => nodeName(i * 10));
  const grantsOf = new Map<string, Provision[]>();
  const provisionsOf = new Map<string, Provision>();
  const relationsOf = new Map<string, Relation>();
  for (let i = 0; i < size; i += 1) {
    if (i % 10 !== 5 || size < 10) continue;
    const node = nodeName(i);
    const provider = brokers[(i * 7) % brokers.length] as string;
    const relation: Relation = {
      consumerModule: 'web',
      providerNode: provider,
      providerModule: 'broker',
      kind: 'amqp',
    };
    const name = provisionName(node, 'web');
    const provision: Provision = seededProvision(
      {
        consumerNode: node,
        consumerModule: 'web',
        providerNode: provider,
        providerModule: 'broker',
        kind: 'amqp',
        resource: name,
        user: name,
        mintedAt: createdAt,
      },
      i,
    );
    relationsOf.set(node, relation);
    provisionsOf.set(node, provision);
    grantsOf.set(provider, [...(grantsOf.get(provider) ?? []), provision]);
  }
  items.push({ ...moduleKey('broker'), module: 'broker', provides: 'amqp' });
  for (const module of moduleNames) items.push({ ...moduleKey(module), module, version: '1.0' });
  for (let i = 0; i < size; i += 1) {
    const node = nodeName(i);
    const assignments: Assignment[] = moduleNames.map((module) => ({
      module,
      version: '1.0',
      provides: null,
    }));
    if (i % 10 === 0) assignments.push({ module: 'broker', version: null, provides: 'amqp' });
    const relation = relationsOf.get(node);
    const provision = provisionsOf.get(node);
    const snapshot: NodeSnapshot = {
      node,
      assignments,
      relations: relation ? [relation] : [],
      dependents: [],
      provisions: provision ? [provision] : [],
      grants: grantsOf.get(node) ?? [],
      sent: undefined,
      mark: undefined,
      sealingKey: testSealing.key,
    };
    const composed = composeAsMinted(snapshot, allEnrolled(snapshot));
    // as assign and consume leave them: counts on the node item, a carrier per assignment, the
    // provider's side of each relation
    const grants = grantsOf.get(node) ?? [];
    items.push({
      ...nodeItem(node, createdAt),
      modules: assignments.length,
      consumes: relation ? 1 : 0,
      consumers: grants.length,
    });
    for (const assignment of assignments) {
      const consumedBy = assignment.module === 'broker' ? grants.length : 0;
      items.push({ ...assignmentItem(node, assignment), ...(consumedBy ? { consumedBy } : {}) });
      items.push(carrierItem(assignment.module, node, assignment.version));
    }
    items.push(enrolmentItemFor(node));
    if (relation) items.push(relationItem(node, relation));
    if (provision) items.push(provisionItem(provision), grantItem(provision));
    if (relation) items.push(consumedByItem({ consumerNode: node, ...relation }));
    items.push(
      deliveryItem({
        node,
        revision: 1,
        digest: composed.digest,
        sentAt: createdAt,
        canonical: composed.canonical,
      }),
    );
  }
  return items;
}

/** Writes the items 25 a batch; `progress` is told the count written after each batch. */
export async function seed(
  client: DynamoDBDocumentClient,
  table: string,
  items: Item[],
  progress?: (written: number, of: number) => void,
) {
  const batches: Item[][] = [];
  for (let i = 0; i < items.length; i += 25) batches.push(items.slice(i, i + 25));
  let written = 0;
  await mapLimit(batches, 8, async (batch) => {
    let pending = batch.map((Item) => ({ PutRequest: { Item } }));
    // DynamoDB Local on cores shared with other work can answer past the client's wait: seeding
    // is the bench's, not the path's, so a batch that timed out is written again (puts repeat)
    for (let attempt = 1; pending.length > 0; attempt += 1) {
      try {
        const answer = await client.send(new BatchWriteCommand({ RequestItems: { [table]: pending } }));
        pending = (answer.UnprocessedItems?.[table] ?? []) as typeof pending;
      } catch (error) {
        if (attempt >= 5 || (error as Error).name !== 'TimeoutError') throw error;
      }
    }
    written += batch.length;
    progress?.(written, items.length);
  });
}

export async function run(): Promise<BenchTable[]> {
  const sizes = (process.env.MESH_BENCH_SIZES ?? '100,1000,10000').split(',').map(Number);
  const environment = await benchEnvironment();
  const rows: Array<Array<string | number>> = [];
  const notes: string[] = [];
  try {
    for (const size of sizes) {
      const config = await environment.provision(`bench-push-${size}`);
      const setup = makeDynamoDBClient(config);
      const items = seedItems(size);
      const seeded = performance.now();
      await seed(documentClient(setup), config.inventoryTable, items);
      process.stderr.write(
        `bench push: seeded ${size} nodes (${items.length} items) in ${((performance.now() - seeded) / 1000).toFixed(1)} s\n`,
      );
      setup.destroy();

      const client = makeDynamoDBClient(config);
      const { measure } = meter(client);
      // Every store of these parts reads and writes through the metered client.
      const parts = localPartsFor(config, { clients: { dynamodb: client } });
      const service = parts.meshService;
      const flow = parts.pushFlow;
      await flow.push({ behind: true }); // warm the interpreter; nothing is behind

      const named = [];
      for (let k = 0; k < 3; k += 1) {
        const consumer = nodeName(10 * k + 3);
        const provider = nodeName(size >= 100 ? 10 * (k + 5) : 0);
        await service.assign(consumer, `app${k}`, null, localActor());
        await flow.push({ node: consumer });
        await service.consume(
          { node: consumer, module: `app${k}` },
          { node: provider, module: 'broker' },
          localActor(),
        );
        const measured = await measure(() => flow.push({ node: consumer }));
        if (measured.value.flushed.length !== 1 || measured.value.flushed[0]?.node !== provider) {
          throw new Error(`the named push did not flush ${provider}: ${JSON.stringify(measured.value)}`);
        }
        named.push(measured);
      }
      const full = await measure(() => flow.push({ behind: true, full: true }));
      if (full.value.flushed.length !== 0)
        throw new Error(`the audit found ${full.value.flushed.length} behind`);
      const namedRequests = median(named.map((m) => m.requests));
      rows.push(
        [
          size,
          'named push (+1 cross-node consumer)',
          median(named.map((m) => m.requests - m.recordWrites)),
          `${2 * 3 + 3}`,
          median(named.map((m) => m.recordWrites)),
          median(named.map((m) => m.capacity)),
          median(named.map((m) => m.ms)),
        ],
        [
          size,
          'push --behind --full',
          full.requests - full.recordWrites,
          '-',
          full.recordWrites,
          full.capacity,
          full.ms,
        ],
      );
      notes.push(
        `${size} nodes: the full audit made ${(full.requests / namedRequests).toFixed(0)}× the named push's requests`,
      );
      client.destroy();
    }
  } finally {
    await environment.stop();
  }
  return [
    {
      title: 'push on DynamoDB Local via the ASL (requests, consumed capacity units, wall ms)',
      columns: ['nodes', 'push', 'requests', 'bound 2×3+3', 'record writes', 'capacity', 'wall ms'],
      rows,
      notes: [
        'named push: median of 3; affected nodes = consumer + provider; the consume itself is not counted',
        "bound: per node sent, its partition, its providers' sealing keys (one BatchGetItem) and its send; per push, the marked list read after each of its two rounds and its audit record's chain head",
        "requests also count the record's start, one transaction with its audit record (docs/audit.md), which `record writes` does not",
        "requests: the push's own reads and writes; record writes: its record (lib/server/adapters/push/push-records.ts), written when it starts and when it is done, noted as each round starts and, in a round of several batches, as each batch ends",
        'capacity and wall ms: everything, record included',
        ...notes,
      ],
    },
  ];
}
