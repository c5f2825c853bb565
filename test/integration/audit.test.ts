import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rotateHostKeys } from '../../lib/clients/host/key-rotation.ts';
import { loadOrCreateNodeKeys } from '../../lib/clients/host/keys.ts';
import { startEventSource } from '../../lib/local/event-source.ts';
import { type RunningApi, startLocalApi } from '../../lib/local/http-server.ts';
import { localPartsFor } from '../../lib/local/parts.ts';
import { auditItems, DynamoDBAuditTrail, recordSk } from '../../lib/server/adapters/audit/audit-trail.ts';
import { makeDynamoDBClient, makeSQSClient } from '../../lib/server/adapters/aws-clients.ts';
import { tokenItemKey } from '../../lib/server/adapters/dynamodb/keys.ts';
import { moduleKey } from '../../lib/server/adapters/dynamodb/mesh-items.ts';
import { documentClient } from '../../lib/server/adapters/dynamodb/requests.ts';
import { controlConsumerHandler } from '../../lib/server/api/handlers/control-consumer.ts';
import type { AuditRecord } from '../../lib/server/core/audit/record.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { StoreUnavailableError } from '../../lib/server/core/unavailable.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import { hostCalls } from '../support/host-calls.ts';
import { runMesh } from '../support/processes.ts';
import { provisionTestResources } from '../support/resources.ts';

let config: MeshConfig;
let api: RunningApi;
const dirs: string[] = [];
const documents = () => documentClient(makeDynamoDBClient(config));

beforeAll(async () => {
  config = await provisionTestResources('audit');
  api = await startLocalApi({ port: 0, parts: localPartsFor(config) });
});

afterAll(async () => {
  await api?.stop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A trail whose record's condition can never hold: the record write broken on purpose. */
const brokenTrail = (client: ReturnType<typeof documentClient>) =>
  new DynamoDBAuditTrail({
    client,
    tableName: config.inventoryTable,
    retentionDays: 365,
    itemsOf: (record, head, table) =>
      auditItems(record, head, table).map((item, index) =>
        index === 0 && item.Put
          ? { Put: { ...item.Put, ConditionExpression: 'attribute_exists(pk)' } }
          : item,
      ),
  });

const calls = () => hostCalls(api.url);
const operator = (method: string, path: string, body?: unknown) => calls().operator(method, path, body);
const trail = async (query: string) => {
  const answer = await operator('GET', `/audit?${query}`);
  expect(answer.status).toBe(200);
  return answer.body.records as AuditRecord[];
};

describe('every change writes exactly one audit record, in its own transaction', () => {
  it('node add and remove, module assign and unassign, token issue and revoke, enrolment, key rotation, push, disenrolment: one record each', async () => {
    for (const node of ['alpha', 'beta'])
      expect((await operator('POST', '/nodes', { node })).status).toBe(201);
    const dir = mkdtempSync(join(tmpdir(), 'mesh-audit-'));
    dirs.push(dir);
    const { keys } = await loadOrCreateNodeKeys(dir);
    const token = await calls().enrol('alpha', keys);
    const rotated = await rotateHostKeys({ dir, api: api.url, node: 'alpha', current: keys });
    expect(rotated.kind).toBe('rotated');
    expect((await operator('POST', '/nodes/alpha/token', {})).status).toBe(201);
    expect((await operator('DELETE', '/nodes/alpha/token')).status).toBe(200);
    expect((await operator('PUT', '/nodes/alpha/modules/web', {})).status).toBe(201);
    expect((await operator('POST', '/push', { node: 'alpha' })).status).toBe(200);
    expect((await operator('DELETE', '/nodes/alpha/modules/web')).status).toBe(200);
    expect((await operator('DELETE', '/nodes/alpha/enrolment')).status).toBe(200);
    expect((await operator('DELETE', '/nodes/beta')).status).toBe(200);

    const alpha = await trail('node=alpha');
    const beta = await trail('node=beta');

    expect(alpha.map((record) => record.action)).toEqual([
      'node.disenrol',
      'module.unassign',
      'push.start',
      'module.assign',
      'token.revoke',
      'token.issue',
      'node.keys.rotate',
      'node.enrol',
      'token.issue',
      'node.add',
    ]);
    expect(alpha.map((record) => record.seq)).toEqual([10, 9, 8, 7, 6, 5, 4, 3, 2, 1]);
    expect(beta).toMatchObject([
      { action: 'node.remove', target: 'node:beta', outcome: 'done', seq: 2 },
      { action: 'node.add', target: 'node:beta', outcome: 'done', seq: 1 },
    ]);
    const operatorActs = alpha.filter(
      (record) => !record.action.startsWith('node.enrol') && !record.action.startsWith('node.keys'),
    );
    for (const record of operatorActs)
      expect(record).toMatchObject({ principal: 'local', source: expect.any(String) });
    expect(alpha.find((r) => r.action === 'node.enrol')?.principal).toBe(`key:${keys.thumbprint}`);
    expect(alpha.find((r) => r.action === 'node.keys.rotate')?.principal).toBe(`key:${keys.thumbprint}`);
    expect(new Set(alpha.map((record) => record.requestId)).size).toBe(alpha.length);
    // The token never: neither its secret nor the whole of it.
    expect(JSON.stringify(alpha)).not.toContain(token.split('_').at(-1));
  });

  it('reads by action, actor and since, across nodes, newest first', async () => {
    const issues = await trail('action=token.issue');
    const all = await trail('');
    const none = await trail(`since=${new Date(Date.now() + 60_000).toISOString()}`);
    const byLocal = await trail('actor=local&limit=3');

    expect(issues.map((record) => record.action)).toEqual(['token.issue', 'token.issue']);
    expect(all[0]).toMatchObject({ action: 'node.remove', subject: 'node:beta' });
    expect(all.map((record) => record.time)).toEqual(
      all
        .map((record) => record.time)
        .sort()
        .reverse(),
    );
    expect(none).toEqual([]);
    expect(byLocal).toHaveLength(3);
    expect(byLocal.every((record) => record.principal === 'local')).toBe(true);
  });

  it('a change whose record cannot be written does not happen: nothing half-done', async () => {
    await operator('POST', '/nodes', { node: 'gamma' });
    const client = documents();
    const broken = brokenTrail(client);
    const brokenApi = await startLocalApi({
      port: 0,
      parts: localPartsFor(config, { overrides: { auditTrail: broken } }),
    });
    try {
      const issued = await hostCalls(brokenApi.url).operator('POST', '/nodes/gamma/token', {});

      const { Item } = await client.send(
        new GetCommand({ TableName: config.inventoryTable, Key: tokenItemKey('gamma') }),
      );
      expect(issued).toMatchObject({ status: 503, body: { error: { code: 'try_again' } } });
      expect(Item).toBeUndefined();
      expect((await trail('node=gamma')).map((record) => record.action)).toEqual(['node.add']);
    } finally {
      await brokenApi.stop();
    }
  });
});

describe('the queued requests and the summary rebuild', () => {
  it('a build, the upgrade a catch-up announces and an upgrade each write one record naming the operator who asked; what changes nothing writes none', async () => {
    await operator('POST', '/nodes', { node: 'eps' });
    await operator('PUT', '/nodes/eps/modules/queued-web', {});
    const parts = localPartsFor(config, { flowRetryIntervalMs: 0 });
    const source = startEventSource({
      queueUrl: config.controlQueueUrl,
      sqs: makeSQSClient(config),
      handler: controlConsumerHandler(parts),
      pollers: 1,
      waitTimeSeconds: 1,
    });
    const recordsOf = async (action: string, count: number) => {
      for (let waited = 0; waited < 30_000; waited += 100) {
        const records = await trail(`action=${action}`);
        if (records.length >= count) return records;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      throw new Error(`no ${count} ${action} records within 30 s`);
    };
    try {
      const built = await operator('POST', '/builds', { module: 'queued-web', version: '2.0', id: 'qw-1' });
      const builds = await recordsOf('build.record', 1);
      const caughtUp = await operator('POST', '/catch-up', {});
      const announced = await recordsOf('module.upgrade', 1);
      const upgraded = await operator('POST', '/upgrades', { module: 'queued-web', version: '2.1' });
      const upgrades = await recordsOf('module.upgrade', 2);
      const at = new Date().toISOString();
      const repeat = await parts.builds.recordBuild(
        { id: 'qw-1', module: 'queued-web', version: '2.0', result: 'succeeded', finishedAt: at },
        { receivedAt: at, recordedAt: at },
        localActor(),
      );
      await parts.moduleVersions.setModuleVersion('queued-web', '2.1', localActor());

      expect([built.status, caughtUp.status, upgraded.status]).toEqual([202, 202, 202]);
      expect(builds).toMatchObject([
        {
          subject: 'mesh',
          target: 'module:queued-web@2.0',
          principal: 'local',
          details: { build: 'qw-1', result: 'succeeded' },
        },
      ]);
      expect(announced).toMatchObject([
        { subject: 'mesh', target: 'module:queued-web@2.0', principal: 'local' },
      ]);
      expect(upgrades).toMatchObject([
        { target: 'module:queued-web@2.1', principal: 'local' },
        { target: 'module:queued-web@2.0', principal: 'local' },
      ]);
      // Each names the request that asked: the build's, the catch-up's, the upgrade's.
      expect(new Set([...builds, ...upgrades].map((record) => record.requestId)).size).toBe(3);
      expect(repeat).toBe('repeat');
      expect(await trail('action=build.record')).toHaveLength(1);
      expect(await trail('action=module.upgrade')).toHaveLength(2);
    } finally {
      await source.stop();
    }
  });

  it('a summary rebuild writes one record on the mesh chain', async () => {
    const rebuilt = await operator('POST', '/summary/rebuild', {});

    expect(rebuilt.status).toBe(200);
    expect(await trail('action=summary.rebuild')).toMatchObject([
      { subject: 'mesh', target: 'summary', principal: 'local', outcome: 'done' },
    ]);
  });

  it('a build, an upgrade or a rebuild whose record cannot be written does not happen', async () => {
    const client = documents();
    const parts = localPartsFor(config, { overrides: { auditTrail: brokenTrail(client) } });
    await operator('POST', '/nodes', { node: 'zeta' });
    await operator('PUT', '/nodes/zeta/modules/unrecorded', {});
    const at = new Date().toISOString();
    const rebuildsBefore = (await trail('action=summary.rebuild')).length;

    const build = parts.builds.recordBuild(
      { id: 'unrecorded-1', module: 'unrecorded', version: '1.0', result: 'succeeded', finishedAt: at },
      { receivedAt: at, recordedAt: at },
      localActor(),
    );
    await expect(build).rejects.toThrow(StoreUnavailableError);
    await expect(parts.moduleVersions.setModuleVersion('unrecorded', '1.0', localActor())).rejects.toThrow(
      StoreUnavailableError,
    );
    await expect(parts.summary.rebuild(localActor())).rejects.toThrow(StoreUnavailableError);

    const kept = await client.send(
      new GetCommand({ TableName: config.inventoryTable, Key: { pk: 'build#unrecorded-1', sk: 'build' } }),
    );
    expect(kept.Item).toBeUndefined();
    expect(await localPartsFor(config).builds.latestSuccessfulBuilds()).not.toContainEqual(
      expect.objectContaining({ module: 'unrecorded' }),
    );
    const module = await client.send(
      new GetCommand({ TableName: config.inventoryTable, Key: moduleKey('unrecorded') }),
    );
    expect(module.Item).toBeDefined();
    expect(module.Item?.version).toBeUndefined();
    expect(await trail('action=summary.rebuild')).toHaveLength(rebuildsBefore);
    const summary = await operator('GET', '/summary');
    expect(summary.body).toMatchObject({ exact: true });
  });
});

describe('the admin corrections', () => {
  it('a build retraction writes one record on the mesh chain; one retracted before writes none', async () => {
    const at = new Date().toISOString();
    await localPartsFor(config).builds.recordBuild(
      { id: 'b-1', module: 'web', version: '1.0.0', result: 'succeeded', finishedAt: at },
      { receivedAt: at, recordedAt: at },
      localActor(),
    );

    const first = await operator('POST', '/builds/retractions', { module: 'web', version: '1.0.0' });
    const again = await operator('POST', '/builds/retractions', { module: 'web', version: '1.0.0' });

    expect([first.status, again.status]).toEqual([200, 200]);
    expect(await trail('action=build.retract')).toMatchObject([
      { subject: 'mesh', target: 'module:web@1.0.0', principal: 'local' },
    ]);
  });

  it('a rollout start writes one record on the mesh chain, naming the rollout; its abort another', async () => {
    for (const node of ['ro-1', 'ro-2', 'ro-3']) {
      await operator('POST', '/nodes', { node });
      await operator('PUT', `/nodes/${node}/modules/web`, {});
    }
    // sent once, so an abort lets nothing out: nothing of theirs is behind
    expect((await operator('POST', '/push', { behind: true })).status).toBe(200);
    const on = { on: 'role=none', nodes: ['ro-1', 'ro-2', 'ro-3'], waves: '1,100%' };

    const started = await operator('POST', '/rollouts', on);

    expect(started.status).toBe(201);
    const id = (started.body as { id: string }).id;
    expect(await trail('action=rollout.start')).toMatchObject([
      {
        subject: 'mesh',
        target: `rollout:${id}`,
        principal: 'local',
        outcome: 'done',
        details: { origin: 'on', waves: 2, nodes: 3 },
      },
    ]);
    expect((await operator('POST', `/rollouts/${id}/abort`, {})).status).toBe(200);
    expect(await trail('action=rollout.abort')).toMatchObject([
      { subject: 'mesh', target: `rollout:${id}`, principal: 'local', details: { state: 'aborted' } },
    ]);
    expect((await operator('POST', `/rollouts/${id}/abort`, {})).status).toBe(409);
    expect(await trail('action=rollout.abort')).toHaveLength(1);
  });

  it('a report reset of a node with no report writes nothing', async () => {
    await operator('POST', '/nodes', { node: 'delta' });

    expect(await operator('DELETE', '/nodes/delta/report')).toMatchObject({
      status: 200,
      body: { reset: null },
    });
    expect((await trail('node=delta')).map((record) => record.action)).toEqual(['node.add']);
  });
});

describe('refused requests', () => {
  it('are counted per source and minute, outside any chain', async () => {
    // one counter per source and minute, whatever was refused: other tests of this file refuse
    // requests too (a second rollout over the same nodes, 409), so what this one adds is counted
    const counted = async () => {
      const refused = await trail('action=request.refused');
      for (const record of refused)
        expect(record).toMatchObject({ action: 'request.refused', principal: 'local', subject: 'refused' });
      return { refused, count: refused.reduce((sum, record) => sum + Number(record.details?.count ?? 0), 0) };
    };
    const before = await counted();

    for (let i = 0; i < 3; i += 1)
      expect((await operator('POST', '/nodes', { node: 'Not A Name' })).status).toBe(400);

    const after = await counted();
    expect(after.count - before.count).toBe(3);
    expect(after.refused[0]).toMatchObject({
      target: 'POST /nodes',
      outcome: expect.stringMatching(/^400 /),
    });
  });
});

describe('mesh audit verify', () => {
  const verify = () => runMesh(api.url, ['audit', 'verify']);

  it('an untouched trail verifies; one record altered, removed or swapped is named', async () => {
    await operator('POST', '/nodes/gamma/token', {});
    await operator('POST', '/nodes/gamma/token', {});
    const intact = await verify();
    expect(intact.code).toBe(0);
    expect(intact.output).toContain('intact');

    const client = documents();
    const table = config.inventoryTable;
    const key = (subject: string, seq: number) => ({ pk: `audit#${subject}`, sk: recordSk(seq) });
    // altered: alpha's enrolment said another outcome
    await client.send(
      new UpdateCommand({
        TableName: table,
        Key: key('node:alpha', 2),
        UpdateExpression: 'SET outcome = :forged',
        ExpressionAttributeValues: { ':forged': 'refused' },
      }),
    );
    // removed: beta's only record
    await client.send(new DeleteCommand({ TableName: table, Key: key('node:beta', 1) }));
    // reordered: gamma's two records swapped
    const read = async (seq: number) =>
      (await client.send(new GetCommand({ TableName: table, Key: key('node:gamma', seq) }))).Item ?? {};
    const [first, second] = [await read(1), await read(2)];
    await client.send(new PutCommand({ TableName: table, Item: { ...second, ...key('node:gamma', 1) } }));
    await client.send(new PutCommand({ TableName: table, Item: { ...first, ...key('node:gamma', 2) } }));

    const broken = await verify();

    expect(broken.code).toBe(14);
    expect(broken.output).toContain('node:alpha record 2 altered');
    expect(broken.output).toContain('node:beta record 1 removed');
    expect(broken.output).toContain('node:gamma record 1 reordered');
    expect(broken.output).toContain('node:gamma record 2 reordered');
    expect(broken.output).not.toContain('node:alpha record 1 ');
  });
});

describe('mesh audit verify cannot be blinded by what sits outside the hashes (issue 36, finding 4)', () => {
  let blinded: MeshConfig;
  let server: RunningApi;
  beforeAll(async () => {
    blinded = await provisionTestResources('auditblind');
    server = await startLocalApi({ port: 0, parts: localPartsFor(blinded) });
  });
  afterAll(async () => {
    await server?.stop();
  });

  const send = (method: string, path: string, body?: unknown) =>
    hostCalls(server.url).operator(method, path, body);
  const verify = () => runMesh(server.url, ['audit', 'verify', '--json']);
  const client = () => documentClient(makeDynamoDBClient(blinded));
  const recordKey = (subject: string, seq: number) => ({ pk: `audit#${subject}`, sk: recordSk(seq) });
  /** Each finding as `subject seq problem`. */
  const findings = async () => {
    const answer = await verify();
    const { findings: found } = JSON.parse(answer.stdout) as {
      findings: Array<{ subject: string; seq: number; problem: string }>;
    };
    return { code: answer.code, found: found.map((f) => `${f.subject} ${f.seq} ${f.problem}`) };
  };

  it('names a chain taken off the list of chains, with the principal forged in its first record', async () => {
    expect((await send('POST', '/nodes', { node: 'broker' })).status).toBe(201);
    expect((await send('PUT', '/nodes/broker/modules/rabbit', { provides: 'amqp' })).status).toBe(201);
    expect(await findings()).toEqual({ code: 0, found: [] });

    // the run's attack: the first record names someone else, and the chain's entry is deleted
    await client().send(
      new UpdateCommand({
        TableName: blinded.inventoryTable,
        Key: recordKey('node:broker', 1),
        UpdateExpression: 'SET principal = :forged',
        ExpressionAttributeValues: { ':forged': 'arn:aws:iam::1:user/someone-else' },
      }),
    );
    await client().send(
      new DeleteCommand({
        TableName: blinded.inventoryTable,
        Key: { pk: 'audit#chains', sk: 'node:broker' },
      }),
    );
    const { code, found } = await findings();
    expect(code).toBe(14);
    expect(found).toEqual(['node:broker 1 hidden']);
  });

  it('names the head’s expiry edited to pass off the last records as expired', async () => {
    expect((await send('POST', '/nodes', { node: 'web1' })).status).toBe(201);
    for (const module of ['a', 'b', 'c'])
      expect((await send('PUT', `/nodes/web1/modules/${module}`, {})).status).toBe(201);
    const before = (await findings()).found;
    // records 3 and 4 deleted, and the head's expiresAtOfLast (outside every hash) set to the past
    for (const seq of [3, 4])
      await client().send(
        new DeleteCommand({ TableName: blinded.inventoryTable, Key: recordKey('node:web1', seq) }),
      );
    await client().send(
      new UpdateCommand({
        TableName: blinded.inventoryTable,
        Key: { pk: 'audit#node:web1', sk: 'head' },
        UpdateExpression: 'SET expiresAtOfLast = :past',
        ExpressionAttributeValues: { ':past': 1_000 },
      }),
    );
    const { code, found } = await findings();
    expect(code).toBe(14);
    expect(found.filter((f) => !before.includes(f))).toEqual(['node:web1 2 altered']);
  });

  it('names a record whose index key was removed, which mesh audit no longer lists', async () => {
    expect((await send('POST', '/nodes', { node: 'db1' })).status).toBe(201);
    const before = (await findings()).found;
    await client().send(
      new UpdateCommand({
        TableName: blinded.inventoryTable,
        Key: recordKey('node:db1', 1),
        UpdateExpression: 'REMOVE gsi1pk',
      }),
    );
    const listed = (await send('GET', '/audit?action=node.add')).body.records as AuditRecord[];
    expect(listed.map((record) => record.target)).not.toContain('node:db1');
    const { code, found } = await findings();
    expect(code).toBe(14);
    expect(found.filter((f) => !before.includes(f))).toEqual(['node:db1 1 hidden']);
  });

  it('finds the same walked one chain, then one day, a page at a time', async () => {
    const reader = localPartsFor(blinded).auditReader;
    const whole = await reader.verify();
    const paged: string[] = [];
    let pages = 0;
    let after: string | undefined;
    do {
      const page = await reader.verify({ ...(after ? { after } : {}), until: Date.now() - 1 });
      paged.push(...page.findings.map((f) => `${f.subject} ${f.seq} ${f.problem}`));
      after = page.next;
      pages += 1;
    } while (after);
    expect(pages).toBeGreaterThan(whole.chains);
    expect(paged.sort()).toEqual(whole.findings.map((f) => `${f.subject} ${f.seq} ${f.problem}`).sort());
  });
});
