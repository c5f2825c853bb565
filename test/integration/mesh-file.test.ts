import type { APIGatewayProxyEvent } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { localPartsFor } from '../../lib/local/parts.ts';
import {
  meshApplyHandler,
  meshApplyPruneHandler,
  meshExportHandler,
  meshPlanHandler,
} from '../../lib/server/api/handlers/mesh-file.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import type { ApplyPlan } from '../../lib/server/core/mesh-file/index.ts';
import { planMatches } from '../../lib/server/core/mesh-file/index.ts';
import type { ApplyOutcome } from '../../lib/server/core/mesh-file/service.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
import { enrolNode } from '../support/enrolled-nodes.ts';
import { provisionTestResources } from '../support/resources.ts';
import { tableContents } from '../support/table-contents.ts';

type Answer = { status: number; body: Record<string, unknown> };

async function call(
  handler: (parts: Parts) => (event: APIGatewayProxyEvent, context: never) => Promise<unknown>,
  parts: Parts,
  event: Partial<APIGatewayProxyEvent>,
): Promise<Answer> {
  const answer = (await handler(parts)({ headers: {}, ...event } as APIGatewayProxyEvent, {} as never)) as {
    statusCode: number;
    body: string;
  };
  return { status: answer.statusCode, body: JSON.parse(answer.body) };
}
const post = (handler: Parameters<typeof call>[0], parts: Parts, body: object) =>
  call(handler, parts, { body: JSON.stringify(body) });
const exportOf = async (parts: Parts, format = 'yaml') =>
  (await call(meshExportHandler, parts, { queryStringParameters: { format } })).body.file as string;

const example = `version: 1
nodes:
  broker-1:
    labels: {role: broker}
    modules:
      rabbit: {provides: amqp}
  web-1:
    labels: {role: web}
    modules:
      nginx:
        consumes: [broker-1/rabbit]
groups:
  web:
    nodes: web-[001-005]
    labels: {role: web}
    modules:
      nginx: {consumes: [broker-1/rabbit]}
tests:
  - {consumer: "web-*/nginx", reaches: broker-1/rabbit}
`;

describe('mesh apply, diff and export on DynamoDB Local', () => {
  let parts: Parts;
  beforeAll(async () => {
    parts = localPartsFor(await provisionTestResources('meshfile'), { flowRetryIntervalMs: 0 });
  });

  it('applies the example, then plans nothing, re-applies writing nothing, and push leaves it consistent', async () => {
    const applied = await post(meshApplyHandler, parts, { file: example });
    expect(applied.status).toBe(200);
    const outcome = applied.body as unknown as ApplyOutcome;
    expect(outcome.complete).toBe(true);
    expect(outcome.plan.add.nodes).toHaveLength(7);
    expect(outcome.plan.add.relations).toHaveLength(6);
    expect(outcome.written.items).toBeGreaterThan(0);

    const again = await post(meshPlanHandler, parts, { file: example });
    expect(planMatches(again.body as unknown as ApplyPlan)).toBe(true);
    const reapplied = (await post(meshApplyHandler, parts, { file: example }))
      .body as unknown as ApplyOutcome;
    expect(reapplied.written).toEqual({ transactions: 0, items: 0 });

    // The items are those node add, assign and consume write: compose reads them and push sends,
    // minting each relation once both its nodes are enrolled.
    for (const node of ['broker-1', 'web-1', 'web-001', 'web-002', 'web-003', 'web-004', 'web-005'])
      await enrolNode(parts, node);
    const pushed = await parts.pushFlow.push({ behind: true });
    expect(pushed.behind).toEqual([]);
    const broker = await parts.meshView.details('broker-1');
    expect(broker?.labels).toEqual({ role: 'broker' });
    expect(broker?.consumedBy).toHaveLength(6);
  });

  it('leaves a relation dropped from the file as drift, and withdraws it with prune, marking both nodes', async () => {
    const dropped = example
      .slice(0, example.indexOf('tests:'))
      .replace('      nginx:\n        consumes: [broker-1/rabbit]\n', '      nginx: {}\n');
    const plan = (await post(meshPlanHandler, parts, { file: dropped })).body as unknown as ApplyPlan;
    expect(planMatches(plan)).toBe(false);
    expect(plan.drift.relations.map((r) => r.consumerNode)).toEqual(['web-1']);
    const kept = (await post(meshApplyHandler, parts, { file: dropped })).body as unknown as ApplyOutcome;
    expect(kept.removed.relations).toBe(0);
    expect((await parts.meshView.details('web-1'))?.consumes).toHaveLength(1);

    // A prune is an admin's: the operator's route refuses it before anything is read or written.
    const before = await tableContents(parts.config);
    const operators = await post(meshApplyHandler, parts, {
      file: dropped,
      prune: true,
      allowMassRemoval: true,
    });
    expect(operators.status).toBe(403);
    expect((operators.body.error as { code: string }).code).toBe('prune_needs_admin');
    expect(await tableContents(parts.config)).toEqual(before);
    // One relation of six is more than the guard's 10%.
    const guarded = await post(meshApplyPruneHandler, parts, { file: dropped });
    expect(guarded.status).toBe(409);
    expect((guarded.body.error as { code: string }).code).toBe('mass_removal');
    const pruned = (await post(meshApplyPruneHandler, parts, { file: dropped, allowMassRemoval: true }))
      .body as unknown as ApplyOutcome;
    expect(pruned.removed.relations).toBe(1);
    expect(pruned.plan.behind).toEqual(['broker-1', 'web-1']);
    expect((await parts.meshView.details('web-1'))?.consumes).toHaveLength(0);
    expect(await parts.pushStore.listMarked()).toEqual(expect.arrayContaining(['broker-1', 'web-1']));
  });

  it('refuses a plan saved on another revision (409) and writes nothing', async () => {
    const plan = (await post(meshPlanHandler, parts, { file: example })).body as unknown as ApplyPlan;
    await parts.meshService.addNode('moved-1', {}, localActor());
    const before = await tableContents(parts.config);
    const stale = await post(meshApplyHandler, parts, { file: example, revision: plan.revision });
    expect(stale.status).toBe(409);
    expect((stale.body.error as { code: string }).code).toBe('stale_plan');
    expect(await tableContents(parts.config)).toEqual(before);
  });

  it('refuses a bad file with every problem at its line and column (422), writing nothing', async () => {
    const bad = example
      .replace('broker-1/rabbit]\ngroups', 'broker-3/rabbit]\ngroups')
      .replace('Web', 'x')
      .replace('web-[001-005]', 'web-[9-7]');
    const before = await tableContents(parts.config);
    const answer = await post(meshApplyHandler, parts, { file: bad });
    expect(await tableContents(parts.config)).toEqual(before);
    expect(answer.status).toBe(422);
    const problems = (
      answer.body.error as { details: { problems: Array<{ line: number; column: number; code: string }> } }
    ).details.problems;
    expect(problems.map((p) => [p.line, p.column, p.code])).toEqual([
      [11, 20, 'unknown-provider'],
      [14, 12, 'bad-range'],
      // The group made no nodes, so the test's subject matches nothing.
      [19, 5, 'test-failed'],
    ]);
  });

  it('exports a file that, applied to an empty mesh, exports the same bytes', async () => {
    for (const format of ['yaml', 'json']) {
      const text = await exportOf(parts, format);
      const empty = localPartsFor(await provisionTestResources('meshfile-copy'), { flowRetryIntervalMs: 0 });
      const applied = await post(meshApplyHandler, empty, { file: text });
      expect(applied.status).toBe(200);
      expect(await exportOf(empty, format)).toBe(text);
    }
  });
});
