import { randomBytes } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { LocalPushFlow } from '../../lib/local/local-push-flow.ts';
import { localPartsFor } from '../../lib/local/parts.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import { nodeKey } from '../../lib/server/adapters/dynamodb/mesh-items.ts';
import { documentClient } from '../../lib/server/adapters/dynamodb/requests.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { LimitReachedError } from '../../lib/server/core/mesh/errors.ts';
import { meshLimits } from '../../lib/server/core/mesh/limits.ts';
import { Pusher } from '../../lib/server/core/push/pusher.ts';
import { pushTaskFunctions } from '../../lib/server/core/push/steps.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
import { provisionTestResources } from '../support/resources.ts';
import { tableContents } from '../support/table-contents.ts';

let config: MeshConfig;
let parts: Parts;

beforeAll(async () => {
  config = await provisionTestResources('limits');
  parts = localPartsFor(config, { flowRetryIntervalMs: 0 });
});

const unique = (name: string) => `${name}-${randomBytes(3).toString('hex')}`;

/** A node item's counts, as the conditions of assign and consume read them. */
async function counts(node: string) {
  const client = documentClient(makeDynamoDBClient(config));
  const { Item } = await client.send(
    new GetCommand({ TableName: config.inventoryTable, Key: nodeKey(node), ConsistentRead: true }),
  );
  return { modules: Item?.modules ?? 0, consumes: Item?.consumes ?? 0, consumers: Item?.consumers ?? 0 };
}

describe('a node’s limits on DynamoDB Local', () => {
  it('refuses a module past the limit with 422 limit_reached and writes nothing; a module taken off makes room', async () => {
    const node = unique('full');
    await parts.meshService.addNode(node, {}, localActor());
    for (let index = 0; index < meshLimits.modulesPerNode; index += 1)
      await parts.meshService.assign(node, `m${index}`, null, localActor());

    const before = await tableContents(config);
    const refused = await parts.meshService
      .assign(node, 'one-more', null, localActor())
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(LimitReachedError);
    expect(refused).toMatchObject({ node, limit: 'modulesPerNode', max: meshLimits.modulesPerNode });
    expect(await tableContents(config)).toEqual(before);

    await parts.meshService.unassign(node, 'm0', false, localActor());
    await parts.meshService.assign(node, 'one-more', null, localActor());
    expect((await counts(node)).modules).toBe(meshLimits.modulesPerNode);
  });

  it('counts relations on both node items and takes them back with each removal, summed per node', async () => {
    const [broker, app] = [unique('broker'), unique('app')];
    await parts.meshService.addNode(broker, {}, localActor());
    await parts.meshService.addNode(app, {}, localActor());
    await parts.meshService.assign(broker, 'rabbit', 'amqp', localActor());
    await parts.meshService.assign(broker, 'local', null, localActor());
    for (const module of ['web', 'jobs']) {
      await parts.meshService.assign(app, module, null, localActor());
      await parts.meshService.consume(
        { node: app, module },
        { node: broker, module: 'rabbit' },
        localActor(),
      );
    }
    await parts.meshService.consume(
      { node: broker, module: 'local' },
      { node: broker, module: 'rabbit' },
      localActor(),
    );
    expect([await counts(app), await counts(broker)]).toEqual([
      { modules: 2, consumes: 2, consumers: 0 },
      { modules: 2, consumes: 1, consumers: 3 },
    ]);

    await parts.meshService.removeNode(app, false, localActor());
    expect(await counts(broker)).toEqual({ modules: 2, consumes: 1, consumers: 1 });
    await parts.meshService.unassign(broker, 'rabbit', true, localActor());
    expect(await counts(broker)).toEqual({ modules: 1, consumes: 0, consumers: 0 });
  });

  it('a node whose declaration is over the size limit is named with its reason; every other node is sent', async () => {
    const [big, small, other] = [unique('big'), unique('small'), unique('other')];
    for (const node of [big, small, other]) await parts.meshService.addNode(node, {}, localActor());
    for (let index = 0; index < 10; index += 1)
      await parts.meshService.assign(big, `module-with-a-long-name-${index}`, null, localActor());
    await parts.meshService.assign(small, 'web', null, localActor());
    await parts.meshService.assign(other, 'web', null, localActor());
    // a limit that the big node’s ten modules pass and one module does not, through the real ASL
    const pusher = new Pusher({ store: parts.pushStore, maxDeclarationBytes: 400 });
    const flow = new LocalPushFlow({ tasks: pushTaskFunctions(pusher) });

    const named = await flow.push({ node: big });
    const again = await flow.push({ behind: true });

    // the tables are shared: other tests' nodes may be behind, and as large, too
    const ours = (nodes: readonly string[]) => nodes.filter((node) => [big, small, other].includes(node));
    expect(named.pushed).toBeNull();
    expect(ours(named.behind)).toEqual([big]);
    expect(named.unsendable).toContainEqual({ node: big, reason: expect.stringContaining('over the 400') });
    expect(ours(named.flushed.map((f) => f.node)).sort()).toEqual([other, small].sort());
    expect(ours(again.flushed.map((f) => f.node))).toEqual([]);
    expect(ours(again.behind)).toEqual([big]);
  });
});
