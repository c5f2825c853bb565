import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../lib/clients/common/exit-codes.ts';
import { type RunningApi, startLocalApi } from '../../lib/local/http-server.ts';
import { localPartsFor } from '../../lib/local/parts.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
import { addEnrolledNode } from '../support/enrolled-nodes.ts';
import { runMesh } from '../support/processes.ts';
import { provisionTestResources } from '../support/resources.ts';

let parts: Parts;
let api: RunningApi;

beforeAll(async () => {
  const config: MeshConfig = { ...(await provisionTestResources('pushcli')), pushWaitSeconds: 0 };
  parts = localPartsFor(config, { flowRetryIntervalMs: 0 });
  api = await startLocalApi({ port: 0, parts });
});

afterAll(async () => {
  await api?.stop();
});

const mesh = (args: string[]) => runMesh(api.url, args);

async function behindNodes(count: number) {
  const id = randomBytes(3).toString('hex');
  const nodes = Array.from({ length: count }, (_, index) => `n${index}-${id}`);
  for (const node of nodes) {
    await parts.meshService.addNode(node, {}, localActor());
    await parts.meshService.assign(node, 'web', null, localActor());
  }
  return nodes;
}

/** The control plane answers every push with its id at once (MESH_PUSH_WAIT_SECONDS=0): the CLI follows it. */
describe('mesh push follows a push that outlasts the request', () => {
  it('shows progress while it follows, then prints what a push answered at once prints', async () => {
    const nodes = await behindNodes(3);

    const pushed = await mesh(['push', '--behind']);

    expect(pushed.code).toBe(ExitCode.ok);
    expect(pushed.output).toMatch(/push \d{8}T\d{9}Z-[0-9a-f]{6} is taking a while; following it/);
    for (const node of nodes)
      expect(pushed.stdout).toMatch(new RegExp(`flushed ${node} at revision 1 \\(round 1\\)`));
    expect(pushed.stdout).toMatch(/the mesh is consistent \(\d+ flushed in 1 round\)/);
  });

  it('--no-wait answers the id at once; --follow ID prints its result, as --json the push contract', async () => {
    const [node] = await behindNodes(1);

    const started = await mesh(['--json', 'push', node as string, '--no-wait']);
    const { push } = JSON.parse(started.stdout) as { push: string };
    const followed = await mesh(['--json', 'push', '--follow', push]);
    const unknown = await mesh(['push', '--follow', '20260101T000000000Z-000000']);

    expect(started.code).toBe(ExitCode.ok);
    expect(followed.code).toBe(ExitCode.ok);
    expect(JSON.parse(followed.stdout)).toEqual({
      pushed: { node, revision: 1 },
      flushed: [],
      rounds: expect.any(Number),
      behind: [],
      heldBack: [],
    });
    expect(unknown.code).toBe(ExitCode.notFound);
  });
});

describe('mesh push NODE names the relations that wait for an enrolment', () => {
  it('says which relation waits for which node, and lists them in --json', async () => {
    const id = randomBytes(3).toString('hex');
    const [web, broker] = [`web-${id}`, `broker-${id}`];
    await addEnrolledNode(parts, web);
    await parts.meshService.addNode(broker, {}, localActor());
    await parts.meshService.assign(broker, 'rabbit', 'amqp', localActor());
    await parts.meshService.assign(web, 'app', null, localActor());
    await parts.meshService.consume(
      { node: web, module: 'app' },
      { node: broker, module: 'rabbit' },
      localActor(),
    );

    const pushed = await mesh(['push', web]);
    const asJson = await mesh(['--json', 'push', web]);

    expect(pushed.code).toBe(ExitCode.ok);
    expect(pushed.stdout).toContain(
      `waiting: app -> ${broker}/rabbit is not minted until ${broker} enrols; that enrolment delivers both sides`,
    );
    expect(JSON.parse(asJson.stdout).waiting).toEqual([
      { module: 'app', provider: { node: broker, module: 'rabbit', kind: 'amqp' }, waitingFor: [broker] },
    ]);
  });
});
