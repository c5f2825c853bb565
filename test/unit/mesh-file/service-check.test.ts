import { describe, expect, it } from 'vitest';
import { BadMeshFileError, type LiveMesh, StalePlanError } from '../../../lib/server/core/mesh-file/index.ts';
import type { LiveMeshReader, MeshFileWriter } from '../../../lib/server/core/mesh-file/ports.ts';
import { type FactRemovals, MeshFileService } from '../../../lib/server/core/mesh-file/service.ts';

const refuse = async () => {
  throw new Error('nothing is written in these tests');
};
const removals: FactRemovals = { unconsume: refuse, unassign: refuse, removeNode: refuse };
const writer: MeshFileWriter = { write: refuse };

/** rabbit is a provider only when the live mesh says so: the file leaves `provides` out. */
const file =
  'version: 1\nnodes:\n  broker-1:\n    modules:\n      rabbit: {}\n  web-1:\n    modules:\n      nginx: {consumes: [broker-1/rabbit]}\n';

describe('MeshFileService checks a file sent again (each part of an apply) once, against the kinds it was checked with', () => {
  it('plans the same file twice alike, and checks it again when the live kinds changed', async () => {
    let live: LiveMesh = { revision: 'r1', nodes: [], modules: new Map([['rabbit', 'amqp']]) };
    const reader: LiveMeshReader = { read: async () => ({ mesh: live, modules: new Map() }) };
    const service = new MeshFileService({ reader, writer, removals });
    const first = (await service.plan({ file })).plan;
    expect((await service.plan({ file })).plan).toEqual(first);

    // The live mesh no longer knows rabbit as a provider: the same text is now a bad file.
    live = { revision: 'r2', nodes: [] };
    const refused = await service.plan({ file }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(BadMeshFileError);
    expect((refused as BadMeshFileError).problems.map((p) => p.code)).toContain('not-a-provider');
  });
});

describe('MeshFileService refuses a saved plan the mesh moved past', () => {
  it('names the saved plan revision as planned and the live one as current', async () => {
    const live: LiveMesh = { revision: 'r9', nodes: [], modules: new Map([['rabbit', 'amqp']]) };
    const reader: LiveMeshReader = { read: async () => ({ mesh: live, modules: new Map() }) };
    const service = new MeshFileService({ reader, writer, removals });
    const refused = await service
      .apply({ file, revision: 'r3', by: { principal: 'local', source: 'test', requestId: 'r' } })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(StalePlanError);
    expect(refused).toMatchObject({ planned: 'r3', current: 'r9' });
    expect((refused as Error).message).toContain('computed on mesh revision r3, and the mesh is at r9 now');
  });
});
