import { beforeAll, describe, expect, it } from 'vitest';
import { localPartsFor } from '../../lib/local/parts.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import { documentClient } from '../../lib/server/adapters/dynamodb/requests.ts';
import { DynamoDBLiveMeshReader } from '../../lib/server/adapters/mesh-file/live-mesh-reader.ts';
import { DynamoDBDescribedRevisions } from '../../lib/server/adapters/mesh-file/mesh-file-described.ts';
import { DynamoDBMeshFileWriter } from '../../lib/server/adapters/mesh-file/mesh-file-writer.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { checkMeshFile, planMatches } from '../../lib/server/core/mesh-file/index.ts';
import { MeshFileService } from '../../lib/server/core/mesh-file/service.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
import { provisionTestResources } from '../support/resources.ts';
import { tableContents } from '../support/table-contents.ts';

const file = `version: 1
nodes:
  broker-1:
    labels: {role: broker}
    modules:
      rabbit: {provides: amqp}
groups:
  web:
    nodes: web-[001-004]
    labels: {role: web}
    modules:
      base: {}
      nginx: {consumes: [broker-1/rabbit]}
tests:
  - {consumer: "web-*/nginx", reaches: broker-1/rabbit}
`;

/**
 * A file an apply was given is not checked again while the mesh is at the revision it describes
 * (docs/mesh-file.md, "Figures"): each service here is a cold one, as a new Lambda or a restarted
 * runtime would be, and counts the checks it makes.
 */
describe('the revision a file describes, on DynamoDB Local', () => {
  let parts: Parts;
  const services = (options: { readonly forget?: boolean } = {}) => {
    const client = documentClient(makeDynamoDBClient(parts.config));
    const table = { client, tableName: parts.config.inventoryTable };
    const reader = new DynamoDBLiveMeshReader(table);
    let checks = 0;
    const service = new MeshFileService({
      // Forgetting the kept revision is the apply as it was before it was kept: every plan checks.
      reader: options.forget
        ? { read: async () => ({ ...(await reader.read()), described: undefined }) }
        : reader,
      writer: new DynamoDBMeshFileWriter({ ...table, audit: parts.auditTrail }),
      removals: parts.meshService,
      described: new DynamoDBDescribedRevisions(table),
      check: (text, checkOptions) => {
        checks += 1;
        return checkMeshFile(text, checkOptions);
      },
    });
    return { service, checks: () => checks };
  };

  beforeAll(async () => {
    parts = localPartsFor(await provisionTestResources('meshfile-described'), { flowRetryIntervalMs: 0 });
  });

  it('plans an unchanged file without checking it, the same plan the check gives, and re-applies writing nothing', async () => {
    const applied = await services().service.apply({ file, by: localActor() });
    expect(applied.complete).toBe(true);
    expect(applied.plan.add.nodes).toHaveLength(5);

    const cold = services();
    const before = await tableContents(parts.config);
    const reapplied = await cold.service.apply({ file, by: localActor() });
    expect(cold.checks()).toBe(0);
    expect(reapplied.written).toEqual({ transactions: 0, items: 0 });
    expect(await tableContents(parts.config)).toEqual(before);
    expect(planMatches(reapplied.plan)).toBe(true);

    const checked = services({ forget: true });
    const { plan } = await checked.service.plan({ file });
    expect(checked.checks()).toBe(1);
    // Every field, the nodes behind already and the digest a saved plan is held to included.
    expect(reapplied.plan).toEqual(plan);
    expect(plan.behind).toHaveLength(5);
  });

  it("checks a file once for the parts of its apply, though the first part writes the modules' records", async () => {
    const fresh = localPartsFor(await provisionTestResources('meshfile-kinds'), { flowRetryIntervalMs: 0 });
    const kept = parts;
    parts = fresh;
    try {
      const parted = services({ forget: true });
      expect((await parted.service.apply({ file, by: localActor() })).complete).toBe(true);
      expect(parted.checks()).toBe(1);
      // The mesh now holds the modules' records: other live kinds, each the one the file gave.
      const { plan } = await parted.service.plan({ file });
      expect(parted.checks()).toBe(1);
      expect(planMatches(plan)).toBe(true);

      // A module the file gives no kind, recorded since as a provider: the file reads otherwise now.
      const withCache = file.replace('      base: {}\n', '      base: {}\n      cache: {}\n');
      const before = await parted.service.plan({ file: withCache });
      expect(parted.checks()).toBe(2);
      expect(before.plan.add.modules.map((m) => m.provides)).toEqual([null, null, null, null]);
      await fresh.meshService.addNode('other-1', {}, localActor());
      await fresh.meshService.assign('other-1', 'cache', 'redis', localActor());
      const after = await parted.service.plan({ file: withCache });
      expect(parted.checks()).toBe(3);
      expect(after.plan.add.modules.map((m) => m.provides)).toEqual(['redis', 'redis', 'redis', 'redis']);
    } finally {
      parts = kept;
    }
  });

  it('checks the file again once the mesh moves, or when the file is another', async () => {
    await parts.meshService.addNode('moved-1', {}, localActor());
    const moved = services();
    const { plan } = await moved.service.plan({ file });
    expect(moved.checks()).toBe(1);
    expect(plan.drift.nodes).toEqual(['moved-1']);

    const other = services();
    const { plan: relabelled } = await other.service.plan({
      file: file.replace('{role: broker}', '{role: queue}'),
    });
    expect(other.checks()).toBe(1);
    expect(relabelled.labels).toEqual([
      { node: 'broker-1', set: { role: 'queue' }, unset: [], was: { role: 'broker' } },
    ]);
  });

  it('keeps the revision once the file is applied with prune, and spares the check again', async () => {
    const pruned = await services().service.apply({
      file,
      by: localActor(),
      prune: true,
      allowMassRemoval: true,
    });
    expect(pruned.removed.nodes).toBe(1);
    const cold = services();
    const { plan } = await cold.service.plan({ file });
    expect(cold.checks()).toBe(0);
    expect(planMatches(plan)).toBe(true);
  });
});
