import type { APIGatewayProxyEvent } from 'aws-lambda';
import { beforeAll, expect, it } from 'vitest';
import { localLambdaContext } from '../../lib/local/lambda-context.ts';
import { localPartsFor } from '../../lib/local/parts.ts';
import {
  meshAssignHandler,
  meshConsumeHandler,
  meshDeclarationHandler,
  meshNodeAddHandler,
  meshPushHandler,
} from '../../lib/server/api/handlers/mesh.ts';
import { meshRotateHandler, meshUnconsumeHandler } from '../../lib/server/api/handlers/mesh-removals.ts';
import type { Declaration } from '../../lib/server/core/mesh/declaration.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
import { enrolNode } from '../support/enrolled-nodes.ts';
import { provisionTestResources } from '../support/resources.ts';

/**
 * A consumer and its provider on one node share the node's item: every read and write that
 * names both must name that item once (DynamoDB refuses a key twice in one BatchGetItem or
 * transaction), which only DynamoDB Local shows.
 */
let parts: Parts;

beforeAll(async () => {
  parts = localPartsFor(await provisionTestResources('same-node'));
});

type Answer = { statusCode: number; body: string };
const call = (
  handler: (event: APIGatewayProxyEvent, context: never) => Promise<unknown>,
  event: Partial<APIGatewayProxyEvent>,
) =>
  handler(
    {
      headers: {},
      pathParameters: null,
      body: null,
      queryStringParameters: null,
      ...event,
    } as APIGatewayProxyEvent,
    localLambdaContext('mesh-push') as never,
  ) as Promise<Answer>;
const code = (answer: Answer) => [answer.statusCode, JSON.parse(answer.body).error?.code ?? 'ok'];

const relation = { node: 'solo', module: 'app', providerNode: 'solo', providerModule: 'pg' };
const consume = (module: string) =>
  call(meshConsumeHandler(parts), {
    pathParameters: { node: 'solo', module: 'app' },
    body: JSON.stringify({ provider: { node: 'solo', module } }),
  });
const declaration = async () => {
  await call(meshPushHandler(parts), { body: JSON.stringify({ node: 'solo' }) });
  const answer = await call(meshDeclarationHandler(parts), { pathParameters: { node: 'solo' } });
  const { provisions, grants } = JSON.parse(answer.body).declaration as Declaration;
  return {
    provisions: provisions.map((p) => [p.module, `${p.provider.node}/${p.provider.module}`, p.fingerprint]),
    grants: grants.map((g) => [g.module, `${g.consumer.node}/${g.consumer.module}`, g.fingerprint]),
  };
};

it('a module consumes a provider on its own node: related, sent with provision and grant, rotated, withdrawn', async () => {
  await call(meshNodeAddHandler(parts), { body: JSON.stringify({ node: 'solo' }) });
  await enrolNode(parts, 'solo');
  await call(meshAssignHandler(parts), { pathParameters: { node: 'solo', module: 'app' }, body: '{}' });
  await call(meshAssignHandler(parts), {
    pathParameters: { node: 'solo', module: 'pg' },
    body: JSON.stringify({ provides: 'postgres' }),
  });

  expect([code(await consume('cache')), code(await consume('pg')), code(await consume('pg'))]).toEqual([
    [404, 'module_not_assigned'],
    [201, 'ok'],
    [409, 'duplicate_relation'],
  ]);
  const sent = await declaration();
  const secret = sent.provisions[0]?.[2];
  expect(sent).toEqual({ provisions: [['app', 'solo/pg', secret]], grants: [['pg', 'solo/app', secret]] });

  expect(code(await call(meshRotateHandler(parts), { pathParameters: relation, body: '{}' }))).toEqual([
    200,
    'ok',
  ]);
  const rotated = await declaration();
  expect(rotated.provisions[0]?.[2]).not.toBe(secret);
  expect(rotated.grants[0]?.[2]).toBe(rotated.provisions[0]?.[2]);

  expect(code(await call(meshUnconsumeHandler(parts), { pathParameters: relation }))).toEqual([200, 'ok']);
  expect(await declaration()).toEqual({ provisions: [], grants: [] });
});
