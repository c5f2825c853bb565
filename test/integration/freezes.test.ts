import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../lib/clients/common/exit-codes.ts';
import { ApiClient, ApiProblemError } from '../../lib/clients/http/api-client.ts';
import { type RunningApi, startLocalApi } from '../../lib/local/http-server.ts';
import { localPartsFor } from '../../lib/local/parts.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import type { Freeze } from '../../lib/server/core/hold/freeze.ts';
import type { PushOutcome } from '../../lib/server/core/push/ports.ts';
import type { Summary } from '../../lib/server/core/summary/summary.ts';
import type { NodeStatus } from '../../lib/server/core/views/ports.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
import { enrolNode } from '../support/enrolled-nodes.ts';
import { runMesh } from '../support/processes.ts';
import { provisionTestResources } from '../support/resources.ts';

/**
 * Freezes over HTTP on DynamoDB Local (docs/decisions/held-back.md): a freeze on `role=db`
 * holds db-1 back from a named push (exit 15) and from `push --behind`, each naming it and the
 * command that lifts it; status, the node list and the summary say who holds it; the freeze and
 * its lifting are on the audit trail; lifted, the next push sends db-1. Bad freezes are refused
 * and write nothing.
 */
let config: MeshConfig;
let parts: Parts;
let api: RunningApi;
let client: ApiClient;

beforeAll(async () => {
  config = await provisionTestResources('freezes');
  parts = localPartsFor(config, { flowRetryIntervalMs: 0 });
  api = await startLocalApi({ port: 0, parts });
  client = new ApiClient(api.url);
  for (const [node, role] of [
    ['db-1', 'db'],
    ['web-1', 'web'],
  ] as const) {
    await parts.meshService.addNode(node, { role }, localActor());
    await enrolNode(parts, node);
  }
});

afterAll(async () => {
  await api?.stop();
});

const statusOf = async () =>
  new Map((await client.call<{ nodes: NodeStatus[] }>('GET', '/status')).nodes.map((n) => [n.node, n]));
const refusal = async (asked: Promise<unknown>) => {
  try {
    await asked;
  } catch (error) {
    if (error instanceof ApiProblemError) return { status: error.status, code: error.code };
    throw error;
  }
  return undefined;
};

describe('a freeze', () => {
  it('holds the nodes it matches from every push, names them with what lifts it, and is audited', async () => {
    await client.call('PUT', '/nodes/db-1/modules/postgres', {});
    await client.call('PUT', '/nodes/web-1/modules/nginx', {});
    await client.call('POST', '/push', { behind: true });

    const { freeze } = await client.call<{ freeze: Freeze }>('POST', '/freezes', {
      on: 'role=db',
      reason: 'quarterly close',
      until: '12h',
    });
    expect(freeze).toMatchObject({ on: 'role=db', reason: 'quarterly close', by: 'local' });
    expect(Date.parse(freeze.until ?? '') - Date.now()).toBeGreaterThan(11 * 3600_000);

    await client.call('PUT', '/nodes/db-1/modules/pgbouncer', {});
    await client.call('PUT', '/nodes/web-1/modules/redis', {});
    const before = (await statusOf()).get('db-1')?.sentRevision;

    const named = await runMesh(api.url, ['--json', 'push', 'db-1']);
    expect(named.code, named.output).toBe(ExitCode.heldBack);
    const outcome = JSON.parse(named.stdout) as PushOutcome;
    expect(outcome.pushed).toBeNull();
    expect(outcome.heldBack).toEqual([{ node: 'db-1', by: 'freeze:role=db' }]);
    expect(outcome.holders).toEqual([
      { by: 'freeze:role=db', freeze: 'role=db', reason: 'quarterly close', until: freeze.until },
    ]);
    expect(outcome.flushed.map((f) => f.node)).toEqual(['web-1']);
    expect(named.output).toContain('held back by freeze role=db, not sent: db-1');
    expect(named.output).toContain('mesh unfreeze --on role=db releases them');

    const behind = await client.call<PushOutcome>('POST', '/push', { behind: true });
    expect(behind).toMatchObject({ behind: [], heldBack: [{ node: 'db-1', by: 'freeze:role=db' }] });
    const held = await statusOf();
    expect(held.get('db-1')).toMatchObject({
      behind: true,
      heldBack: 'freeze:role=db',
      sentRevision: before,
    });
    expect(held.get('web-1')?.heldBack).toBeUndefined();
    const summary = await client.call<Summary>('GET', '/summary');
    expect(summary.heldBack?.freezes).toEqual([
      { on: 'role=db', reason: 'quarterly close', until: freeze.until },
    ]);
    const text = await runMesh(api.url, ['status']);
    expect(text.output).toMatch(/db-1 .*BEHIND {2}held back by freeze role=db/);

    const lifted = await runMesh(api.url, ['unfreeze', '--on', 'role=db']);
    expect(lifted.code, lifted.output).toBe(ExitCode.ok);
    expect(lifted.output).toContain('lifted the freeze on the nodes matching role=db');
    const after = await client.call<PushOutcome>('POST', '/push', { behind: true });
    expect(after.flushed.map((f) => f.node)).toEqual(['db-1']);
    expect(after.heldBack).toBeUndefined();

    const trail = await client.call<{ records: Array<{ action: string; target: string }> }>(
      'GET',
      '/audit?action=mesh.freeze',
    );
    expect(trail.records).toMatchObject([{ action: 'mesh.freeze', target: 'freeze:role=db' }]);
    const unfrozen = await client.call<{ records: Array<{ action: string }> }>(
      'GET',
      '/audit?action=mesh.unfreeze',
    );
    expect(unfrozen.records).toHaveLength(1);
  });

  it('--all holds every node; a bad selector, time or reason, or an unknown freeze, is refused and writes nothing', async () => {
    expect(await refusal(client.call('POST', '/freezes', { on: 'role==db', reason: 'x' }))).toEqual({
      status: 400,
      code: 'freeze_usage',
    });
    expect(
      await refusal(
        client.call('POST', '/freezes', { all: true, reason: 'x', until: '2020-01-01T00:00:00Z' }),
      ),
    ).toEqual({ status: 400, code: 'freeze_usage' });
    expect(await refusal(client.call('POST', '/freezes', { all: true, reason: '   ' }))).toEqual({
      status: 400,
      code: 'freeze_usage',
    });
    expect(await refusal(client.call('POST', '/freezes', { on: 'a=b', all: true, reason: 'x' }))).toEqual({
      status: 400,
      code: 'invalid_request',
    });
    expect(await refusal(client.call('DELETE', '/freezes?on=role%3Dnone'))).toEqual({
      status: 404,
      code: 'freeze_not_found',
    });
    expect((await client.call<{ freezes: Freeze[] }>('GET', '/freezes')).freezes).toEqual([]);

    const frozen = await runMesh(api.url, ['freeze', '--all', '--reason', 'incident 42']);
    expect(frozen.code, frozen.output).toBe(ExitCode.ok);
    await client.call('PUT', '/nodes/web-1/modules/memcached', {});
    const outcome = await client.call<PushOutcome>('POST', '/push', { behind: true });
    expect(outcome.heldBack).toEqual([{ node: 'web-1', by: 'freeze:all' }]);
    const listed = await runMesh(api.url, ['freezes']);
    expect(listed.output).toContain('--all  until lifted  by local');
    expect((await runMesh(api.url, ['unfreeze', '--all'])).code).toBe(ExitCode.ok);
    expect(
      (await client.call<PushOutcome>('POST', '/push', { behind: true })).flushed.map((f) => f.node),
    ).toEqual(['web-1']);
  });
});
