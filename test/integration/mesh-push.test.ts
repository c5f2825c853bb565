import { QueryCommand } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { localLambdaContext } from '../../lib/local/lambda-context.ts';
import { localPartsFor } from '../../lib/local/parts.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import {
  meshAssignHandler,
  meshConsumeHandler,
  meshDeclarationHandler,
  meshNodeAddHandler,
  meshPushHandler,
  meshStatusHandler,
} from '../../lib/server/api/handlers/mesh.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import type { Declaration } from '../../lib/server/core/mesh/declaration.ts';
import { MeshRaceError, ModuleNotFoundError } from '../../lib/server/core/mesh/errors.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
import { addEnrolledNode, enrolNode } from '../support/enrolled-nodes.ts';
import { provisionTestResources } from '../support/resources.ts';

let config: MeshConfig;
let deps: Parts;
const client = makeDynamoDBClient({ region: process.env.AWS_REGION ?? 'us-east-1' });

beforeAll(async () => {
  config = await provisionTestResources('mesh');
  deps = localPartsFor(config);
});

const call = (
  handler: (e: APIGatewayProxyEvent, c: never) => Promise<unknown>,
  event: Partial<APIGatewayProxyEvent>,
) =>
  handler(
    { headers: {}, pathParameters: null, body: null, ...event } as APIGatewayProxyEvent,
    localLambdaContext('mesh-push') as never,
  ) as Promise<{
    statusCode: number;
    body: string;
    headers?: Record<string, string>;
  }>;
const body = (answer: { body: string }) => JSON.parse(answer.body);
const partition = async (node: string) =>
  (
    await client.send(
      new QueryCommand({
        TableName: config.inventoryTable,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': { S: `node#${node}` } },
      }),
    )
  ).Items ?? [];

describe('push on DynamoDB Local, through the real ASL: one push leaves the mesh consistent', () => {
  it('one push of the consumer delivers the grant to the provider and names it flushed', async () => {
    // Prepare
    const add = meshNodeAddHandler(deps);
    const assign = meshAssignHandler(deps);
    const consume = meshConsumeHandler(deps);
    const push = meshPushHandler(deps);
    await call(add, { body: JSON.stringify({ node: 'broker' }) });
    await enrolNode(deps, 'broker');
    await call(add, { body: JSON.stringify({ node: 'shop' }) });
    await enrolNode(deps, 'shop');
    await call(assign, { pathParameters: { node: 'broker', module: 'rabbit' }, body: '{"provides":"amqp"}' });
    await call(assign, { pathParameters: { node: 'shop', module: 'web' } });
    expect((await call(push, { body: '{"behind":true}' })).statusCode).toBe(200);
    const consumed = await call(consume, {
      pathParameters: { node: 'shop', module: 'web' },
      body: JSON.stringify({ provider: { node: 'broker', module: 'rabbit' } }),
    });

    // Act
    const pushed = await call(push, { body: '{"node":"shop"}' });

    // Assess
    expect(consumed.statusCode).toBe(201);
    expect(body(pushed)).toEqual({
      pushed: { node: 'shop', revision: 2 },
      flushed: [{ node: 'broker', revision: 2, round: 1 }],
      rounds: 1,
      behind: [],
    });
    const declaration = await call(meshDeclarationHandler(deps), {
      pathParameters: { node: 'broker' },
    });
    const delivery = body(declaration) as { declaration: Declaration; etag: string; revision: number };
    expect(delivery.revision).toBe(2);
    expect(declaration.headers?.etag).toBe(delivery.etag);
    expect(delivery.declaration.grants.map((g) => g.consumer)).toEqual([{ node: 'shop', module: 'web' }]);
  });

  it('an upgrade marks its carriers, and push --behind sends exactly them', async () => {
    await addEnrolledNode(deps, 'up-a');
    await addEnrolledNode(deps, 'up-b');
    await deps.meshService.assign('up-a', 'cache', null, localActor());
    await deps.meshService.assign('up-b', 'other', null, localActor());
    await deps.pushFlow.push({ behind: true });

    const { carriers } = await deps.moduleVersions.setModuleVersion('cache', '7.2', localActor());
    const outcome = await deps.pushFlow.push({ behind: true });

    expect(carriers).toEqual(['up-a']);
    expect(outcome.flushed.map((f) => f.node)).toEqual(['up-a']);
    const sent = (await deps.deliveries.readDelivery('up-a'))?.declaration as Declaration;
    expect(sent.modules).toEqual([{ name: 'cache', version: '7.2', provides: null }]);
  });
});

describe('upgrades of unknown modules', () => {
  it('refuses an upgrade of a module no node was assigned, so its first assign --provides holds', async () => {
    // Prepare
    await addEnrolledNode(deps, 'uk-p');
    const versions = deps.moduleVersions;

    // Act
    const upgrade = versions.setModuleVersion('uk-mq', '3.12', localActor());
    const refused = await upgrade.then(
      () => undefined,
      (error: unknown) => error,
    );
    const assigned = await call(meshAssignHandler(deps), {
      pathParameters: { node: 'uk-p', module: 'uk-mq' },
      body: '{"provides":"amqp"}',
    });

    // Assess
    expect(refused).toBeInstanceOf(ModuleNotFoundError);
    expect((refused as ModuleNotFoundError).module).toBe('uk-mq');
    expect(assigned.statusCode).toBe(201);
    expect(await deps.meshChanges.readModule('uk-mq')).toEqual({
      module: 'uk-mq',
      version: null,
      provides: 'amqp',
    });
  });
});

describe('status', () => {
  it('keeps the applied revision while a newer one is applying, then failed', async () => {
    // Prepare: revision 1 applied, then revision 2 sent
    await deps.meshService.addNode('st-a', {}, localActor());
    await deps.meshService.assign('st-a', 'web', null, localActor());
    await deps.pushFlow.push({ node: 'st-a' });
    await deps.meshService.assign('st-a', 'cron', null, localActor());
    await deps.pushFlow.push({ node: 'st-a' });
    const reports = deps.reports;
    const report = (sequence: number, state: 'applied' | 'applying' | 'failed', revision: number) =>
      reports.recordReport(
        { node: 'st-a', sequence, state, revision, sentAt: '2026-01-01T00:00:00.000Z' },
        { heardAt: `2026-01-01T00:00:0${sequence}.000Z`, queuedAt: new Date().toISOString() },
      );
    const status = async () => {
      const answer = await call(meshStatusHandler(deps), {});
      const { nodes } = body(answer) as { nodes: Array<Record<string, unknown>> };
      return nodes.find((n) => n.node === 'st-a');
    };

    // Act
    await report(1, 'applied', 1);
    const afterApplied = await status();
    await report(2, 'applying', 2);
    const whileApplying = await status();
    await report(3, 'failed', 2);
    const afterFailed = await status();

    // Assess
    expect(afterApplied).toMatchObject({ sentRevision: 2, appliedRevision: 1, reportState: 'applied' });
    expect(whileApplying).toMatchObject({ appliedRevision: 1, reportState: 'applying' });
    expect(afterFailed).toEqual({
      node: 'st-a',
      enrolled: false,
      enrolledAt: null,
      sentRevision: 2,
      sentAt: expect.any(String),
      appliedRevision: 1,
      appliedAt: '2026-01-01T00:00:01.000Z',
      reportState: 'failed',
      behind: false,
      online: null,
      lastHeard: '2026-01-01T00:00:03.000Z',
    });
  });
});

describe('bad input changes nothing', () => {
  it('answers 404 for an unknown node or module, 400 for a bad name, 409/422 for bad relations', async () => {
    const add = meshNodeAddHandler(deps);
    const assign = meshAssignHandler(deps);
    const consume = meshConsumeHandler(deps);
    await addEnrolledNode(deps, 'bi-p');
    await addEnrolledNode(deps, 'bi-c');
    await deps.meshService.assign('bi-p', 'plain', null, localActor());
    await deps.meshService.assign('bi-p', 'pg', 'sql', localActor());
    await deps.meshService.assign('bi-c', 'app', null, localActor());
    await deps.meshService.consume(
      { node: 'bi-c', module: 'app' },
      { node: 'bi-p', module: 'pg' },
      localActor(),
    );
    const before = await partition('bi-c');
    const relate = (node: string, module: string, provider: object) =>
      call(consume, { pathParameters: { node, module }, body: JSON.stringify({ provider }) });

    const answers = {
      badName: await call(add, { body: '{"node":"Bad_Name"}' }),
      duplicateNode: await call(add, { body: '{"node":"bi-c"}' }),
      unknownNode: await call(assign, { pathParameters: { node: 'ghost', module: 'x' } }),
      unknownModule: await relate('bi-c', 'nope', { node: 'bi-p', module: 'pg' }),
      unknownProvider: await relate('bi-c', 'app', { node: 'ghost', module: 'pg' }),
      notProvider: await relate('bi-c', 'app', { node: 'bi-p', module: 'plain' }),
      duplicate: await relate('bi-c', 'app', { node: 'bi-p', module: 'pg' }),
      unknownPush: await call(meshPushHandler(deps), { body: '{"node":"ghost"}' }),
    };

    expect(
      Object.fromEntries(Object.entries(answers).map(([k, a]) => [k, [a.statusCode, body(a).error.code]])),
    ).toEqual({
      badName: [400, 'invalid_request'],
      duplicateNode: [409, 'node_exists'],
      unknownNode: [404, 'node_not_found'],
      unknownModule: [404, 'module_not_assigned'],
      unknownProvider: [404, 'node_not_found'],
      notProvider: [422, 'not_a_provider'],
      duplicate: [409, 'duplicate_relation'],
      unknownPush: [404, 'node_not_found'],
    });
    expect(body(answers.unknownModule).error.message).toContain('nope');
    expect(await partition('bi-c')).toEqual(before);
    expect(await partition('ghost')).toEqual([]);
  });
});

describe('sent revision', () => {
  it('two sends racing on one node cannot both write the same revision', async () => {
    await addEnrolledNode(deps, 'race');
    const write = (digest: string) =>
      deps.pushStore.send({
        node: 'race',
        revision: 1,
        previousRevision: undefined,
        digest,
        canonical: '{}',
        sentAt: new Date().toISOString(),
        mints: [],
        mark: undefined,
      });

    const results = await Promise.allSettled([write('a'), write('b')]);

    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const lost = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(lost.reason).toBeInstanceOf(MeshRaceError);
    expect((lost.reason as MeshRaceError).race).toBe('revision');
  });
});

describe('the mesh model on DynamoDB (property, fewer runs)', () => {
  it('after a push --behind, an audit finds nothing behind', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 2 }), fc.integer({ min: 0, max: 2 }), fc.boolean()), {
          minLength: 1,
          maxLength: 6,
        }),
        async (pairs) => {
          run += 1;
          const name = (i: number) => `pr${run}-${i}`;
          for (let i = 0; i < 3; i += 1) {
            await addEnrolledNode(deps, name(i));
            await deps.meshService.assign(name(i), 'svc', 'kv', localActor());
            await deps.meshService.assign(name(i), 'use', null, localActor());
          }
          for (const [c, p, pushNow] of pairs) {
            await deps.meshService
              .consume({ node: name(c), module: 'use' }, { node: name(p), module: 'svc' }, localActor())
              .catch(() => undefined);
            if (pushNow) await deps.pushFlow.push({ node: name(c) });
          }
          const outcome = await deps.pushFlow.push({ behind: true });
          const audit = await deps.pushFlow.push({ behind: true, full: true });
          expect(outcome.behind).toEqual([]);
          expect(audit.flushed).toEqual([]);
        },
      ),
      { numRuns: 8 },
    );
  });
});
