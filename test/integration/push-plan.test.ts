import { randomBytes } from 'node:crypto';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { localPartsFor } from '../../lib/local/parts.ts';
import { meshPushPlanHandler } from '../../lib/server/api/handlers/mesh.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import type { PushPlan } from '../../lib/server/core/push/plan.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
import { addEnrolledNode } from '../support/enrolled-nodes.ts';
import { provisionTestResources } from '../support/resources.ts';
import { tableContents } from '../support/table-contents.ts';

let config: MeshConfig;
let parts: Parts;

beforeAll(async () => {
  config = await provisionTestResources('plan');
  parts = localPartsFor(config, { flowRetryIntervalMs: 0 });
});

async function plan(body: object): Promise<{ status: number; plan: PushPlan }> {
  const answer = (await meshPushPlanHandler(parts)(
    { headers: {}, body: JSON.stringify(body) } as APIGatewayProxyEvent,
    {} as never,
  )) as { statusCode: number; body: string };
  return { status: answer.statusCode, plan: JSON.parse(answer.body) };
}

type Sends = {
  readonly pushed: { node: string; revision: number } | null;
  readonly flushed: ReadonlyArray<{ node: string; revision: number }>;
};
const sends = (plan: Sends) =>
  [plan.pushed, ...plan.flushed].map((send) => send && { node: send.node, revision: send.revision });

/** Two new nodes: app's web consumes broker's rabbit (amqp); neither pushed yet. */
async function relatedPair(): Promise<{ broker: string; app: string }> {
  const id = randomBytes(3).toString('hex');
  const [broker, app] = [`broker-${id}`, `app-${id}`];
  await addEnrolledNode(parts, broker);
  await addEnrolledNode(parts, app);
  await parts.meshService.assign(broker, 'rabbit', 'amqp', localActor());
  await parts.meshService.assign(app, 'web', null, localActor());
  await parts.meshService.consume(
    { node: app, module: 'web' },
    { node: broker, module: 'rabbit' },
    localActor(),
  );
  return { broker, app };
}

describe('mesh push --plan on DynamoDB Local', () => {
  it('writes nothing to either table, and names exactly the sends the push then makes', async () => {
    const { broker, app } = await relatedPair();

    const before = await tableContents(config);
    const { status, plan: planned } = await plan({ node: app });
    expect(await tableContents(config)).toEqual(before);

    expect(status).toBe(200);
    expect(planned.pushed?.changes).toEqual([
      { section: 'module', change: 'added', item: 'web' },
      {
        section: 'provision',
        change: 'added',
        item: `web -> ${broker}/rabbit (amqp)`,
        detail: `resource ${app}_web, user ${app}_web, secret new`,
      },
    ]);
    const outcome = await parts.pushFlow.push({ node: app });
    expect(sends(planned)).toEqual(sends(outcome));
    expect(planned.behind).toEqual(outcome.behind);
  });

  it('says a rotated secret changed, and never shows it', async () => {
    const { broker, app } = await relatedPair();
    await parts.pushFlow.push({ node: app });
    await parts.meshService.rotate(
      { node: app, module: 'web' },
      { node: broker, module: 'rabbit' },
      localActor(),
    );

    const before = await tableContents(config);
    const { plan: planned } = await plan({ node: app });
    expect(await tableContents(config)).toEqual(before);

    // The store holds sealed copies, never a secret; the plan holds neither.
    expect(JSON.stringify(before)).not.toContain('"secret"');
    const copies = JSON.stringify(before).match(/"sealedFor(Consumer|Provider)":"[^"]+"/g) ?? [];
    expect(copies.length).toBeGreaterThan(0);
    for (const copy of copies) expect(JSON.stringify(planned)).not.toContain(copy.split('"')[3]);
    expect([...(planned.pushed?.changes ?? []), ...planned.flushed.flatMap((f) => f.changes)]).toEqual([
      {
        section: 'provision',
        change: 'changed',
        item: `web -> ${broker}/rabbit (amqp)`,
        detail: 'secret changed',
      },
      { section: 'grant', change: 'changed', item: `rabbit <- ${app}/web (amqp)`, detail: 'secret changed' },
    ]);
  });
});
