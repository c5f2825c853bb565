import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { localPartsFor } from '../../lib/local/parts.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import { documentClient } from '../../lib/server/adapters/dynamodb/requests.ts';
import { DynamoDBLiveMeshReader } from '../../lib/server/adapters/mesh-file/live-mesh-reader.ts';
import { DynamoDBMeshFileWriter } from '../../lib/server/adapters/mesh-file/mesh-file-writer.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { LimitReachedError, NotAProviderError } from '../../lib/server/core/mesh/errors.ts';
import { meshLimits } from '../../lib/server/core/mesh/limits.ts';
import type { LiveMeshReader } from '../../lib/server/core/mesh-file/ports.ts';
import { MeshFileService } from '../../lib/server/core/mesh-file/service.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import { provisionTestResources } from '../support/resources.ts';
import { tableContents } from '../support/table-contents.ts';

/** Six consumers of one provider, one with two modules: folded into their nodes' facts. */
const file = `version: 1
nodes:
  broker-1:
    labels: {role: broker}
    modules:
      rabbit: {provides: amqp}
      base: {}
  lone-1:
    modules:
      nginx: {consumes: [broker-1/rabbit, web-001/cache]}
      base: {}
groups:
  web:
    nodes: web-[001-005]
    labels: {role: web}
    modules:
      nginx: {consumes: [broker-1/rabbit]}
      cache: {provides: memcache}
`;

/**
 * Times and mark counts differ between two ways of writing one mesh; every other attribute must
 * not. Their audit records differ too (one per change, one per apply transaction): left out.
 */
const comparable = (contents: Record<string, unknown[]>): unknown =>
  JSON.parse(
    JSON.stringify(
      Object.values(contents).map((items) =>
        // The audit and the revision an apply's file describes are the apply's own, not the mesh's facts.
        items.filter((item) => {
          const pk = String((item as { pk?: unknown }).pk);
          return !pk.startsWith('audit#') && pk !== 'mesh#file';
        }),
      ),
      (key, value) =>
        key === 'marks' ? 'n' : typeof value === 'string' && /^\d{4}-\d\d-\d\dT/.test(value) ? 'time' : value,
    ),
  );

/** A reader that lets the mesh move after it was read, as a concurrent operator would. */
const movingAfterRead = (config: MeshConfig, move: () => Promise<void>): LiveMeshReader => {
  const reader = new DynamoDBLiveMeshReader({
    client: documentClient(makeDynamoDBClient(config)),
    tableName: config.inventoryTable,
  });
  return {
    read: async () => {
      const reading = await reader.read();
      await move();
      return reading;
    },
  };
};

const serviceOn = (config: MeshConfig, reader: LiveMeshReader, lanes = 4) => {
  const parts = localPartsFor(config);
  const writer = new DynamoDBMeshFileWriter({
    client: documentClient(makeDynamoDBClient(config)),
    tableName: config.inventoryTable,
    lanes,
    audit: parts.auditTrail,
  });
  return new MeshFileService({ reader, writer, removals: parts.meshService });
};

describe('the mesh file writer on DynamoDB Local', () => {
  it('writes the items node add, assign and consume write, a fact at a time', async () => {
    const one = localPartsFor(await provisionTestResources('writerfacts'));
    const m = one.meshService;
    await m.addNode('broker-1', { role: 'broker' }, localActor());
    await m.assign('broker-1', 'rabbit', 'amqp', localActor());
    await m.assign('broker-1', 'base', null, localActor());
    for (const n of ['001', '002', '003', '004', '005']) {
      await m.addNode(`web-${n}`, { role: 'web' }, localActor());
      await m.assign(`web-${n}`, 'nginx', null, localActor());
      await m.assign(`web-${n}`, 'cache', 'memcache', localActor());
      await m.consume(
        { node: `web-${n}`, module: 'nginx' },
        { node: 'broker-1', module: 'rabbit' },
        localActor(),
      );
    }
    await m.addNode('lone-1', {}, localActor());
    await m.assign('lone-1', 'nginx', null, localActor());
    await m.assign('lone-1', 'base', null, localActor());
    await m.consume(
      { node: 'lone-1', module: 'nginx' },
      { node: 'broker-1', module: 'rabbit' },
      localActor(),
    );
    await m.consume({ node: 'lone-1', module: 'nginx' }, { node: 'web-001', module: 'cache' }, localActor());

    const bulk = localPartsFor(await provisionTestResources('writerbulk'));
    const outcome = await bulk.meshFiles.apply({ by: localActor(), file });
    expect(outcome.complete).toBe(true);
    expect(comparable(await tableContents(bulk.config))).toEqual(comparable(await tableContents(one.config)));
  });

  it('holds a relation to its provider: one unassigned since the read stops the apply, its transaction unwritten', async () => {
    const config = await provisionTestResources('writerprovider');
    const parts = localPartsFor(config);
    await parts.meshFiles.apply({
      by: localActor(),
      file: 'version: 1\nnodes:\n  broker-1:\n    modules:\n      rabbit: {provides: amqp}\n',
    });
    const reader = movingAfterRead(config, () =>
      parts.meshService.unassign('broker-1', 'rabbit', false, localActor()).then(() => {}),
    );
    const service = serviceOn(config, reader);
    const consumer =
      'version: 1\nnodes:\n  broker-1:\n    modules:\n      rabbit: {provides: amqp}\n  web-1:\n    modules:\n      nginx: {consumes: [broker-1/rabbit]}\n';
    await expect(service.apply({ by: localActor(), file: consumer })).rejects.toBeInstanceOf(
      NotAProviderError,
    );
    expect(await parts.meshView.details('web-1')).toBeUndefined();
  });

  it("holds a provider node to its consumers' limit when it filled up since the read", async () => {
    const config = await provisionTestResources('writerlimit');
    const parts = localPartsFor(config);
    await parts.meshFiles.apply({
      by: localActor(),
      file: 'version: 1\nnodes:\n  broker-1:\n    modules:\n      rabbit: {provides: amqp}\n',
    });
    const client = documentClient(makeDynamoDBClient(config));
    // Another operator's consumers, counted on the provider node up to its limit.
    const fill = async () => {
      await client.send(
        new UpdateCommand({
          TableName: config.inventoryTable,
          Key: { pk: 'node#broker-1', sk: 'node' },
          UpdateExpression: 'SET consumers = :full',
          ExpressionAttributeValues: { ':full': meshLimits.consumersPerNode },
        }),
      );
    };
    const service = serviceOn(config, movingAfterRead(config, fill), 2);
    const webs =
      'version: 1\nnodes:\n  broker-1:\n    modules:\n      rabbit: {provides: amqp}\ngroups:\n  web:\n    nodes: web-[01-40]\n    modules:\n      nginx: {consumes: [broker-1/rabbit]}\n';
    // As the CLI does: a request that ran out of time is asked again, until the limit refuses one.
    let refused: unknown;
    for (let asked = 0; asked < 10 && refused === undefined; asked += 1) {
      refused = await service.apply({ by: localActor(), file: webs }).then(
        (outcome) => (outcome.complete ? outcome : undefined),
        (error: unknown) => error,
      );
    }
    expect(refused).toBeInstanceOf(LimitReachedError);
    expect((refused as LimitReachedError).message).toContain('broker-1');
    expect(await parts.meshView.details('web-01')).toBeUndefined();
  });
});
