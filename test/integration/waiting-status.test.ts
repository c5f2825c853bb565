import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../../lib/clients/http/api-client.ts';
import { type RunningApi, startLocalApi } from '../../lib/local/http-server.ts';
import { localPartsFor } from '../../lib/local/parts.ts';
import { type RunningStreamSource, startStreamSource } from '../../lib/local/stream-source.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { envelope } from '../../lib/server/core/control/messages.ts';
import { settleMessage } from '../../lib/server/core/control/settle.ts';
import { type Summary, summaryFromFullRead } from '../../lib/server/core/summary/summary.ts';
import type { NodeStatus } from '../../lib/server/core/views/ports.ts';
import type { MeshGraph, NodeDetails } from '../../lib/server/core/views/views.ts';
import { functionSpecs } from '../../lib/server/functions/table.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
import { addEnrolledNode, enrolNode } from '../support/enrolled-nodes.ts';
import { provisionTestResources } from '../support/resources.ts';

/**
 * Relations waiting for an enrolment, as `GET /status`, `GET /nodes/{node}`, `GET /summary` and
 * `mesh status` show them, over HTTP against DynamoDB Local with the summary kept from the
 * table's stream: named on the consumer's row while they wait, counted in the summary, gone from
 * both once the nodes they wait for enrol.
 */
let config: MeshConfig;
let parts: Parts;
let api: RunningApi;
let client: ApiClient;
let source: RunningStreamSource;
const errors: Error[] = [];
const dynamodb = makeDynamoDBClient({ region: process.env.AWS_REGION ?? 'us-east-1' });
const aggregator = functionSpecs.find((spec) => spec.trigger === 'stream');

beforeAll(async () => {
  config = await provisionTestResources('waiting', {}, { streams: true });
  parts = localPartsFor(config, { flowRetryIntervalMs: 0 });
  api = await startLocalApi({ port: 0, parts });
  client = new ApiClient(api.url);
  if (aggregator?.trigger !== 'stream') throw new Error('no stream function');
  source = startStreamSource({
    dynamodb,
    config,
    tableName: config.inventoryTable,
    handler: aggregator.handler(parts),
    functionName: aggregator.name,
    idleMs: 50,
    onError: (error) => errors.push(error),
  });
});

afterAll(async () => {
  await source?.stop();
  await api?.stop();
  dynamodb.destroy();
});

/** The control queue's consumer taking `enrolled:<node>`, as it would off the queue. */
const enrolled = (node: string) => settleMessage(envelope('enrolled', { node }), `m-${node}`, parts.consumer);

const rows = async () =>
  new Map((await client.call<{ nodes: NodeStatus[] }>('GET', '/status')).nodes.map((s) => [s.node, s]));

/** The summary once the stream is drained, beside the one a full read of the views counts. */
async function summaries(): Promise<{ kept: Summary; counted: Summary }> {
  await source.caughtUp();
  const { nodes } = await client.call<{ nodes: NodeStatus[] }>('GET', '/status');
  const graph = await client.call<MeshGraph>('GET', '/graph');
  return {
    kept: await client.call<Summary>('GET', '/summary'),
    counted: summaryFromFullRead(nodes, graph.nodes, () => null),
  };
}

const meshBin = fileURLToPath(new URL('../../bin/mesh.ts', import.meta.url));

function mesh(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [meshBin, '--api', api.url, ...args],
      { timeout: 30_000 },
      (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr }),
    );
  });
}

describe('relations waiting for an enrolment, in the views and the summary', () => {
  it('names them on the consumer row until the providers enrol, and counts them in the summary', {
    timeout: 120_000,
  }, async () => {
    await addEnrolledNode(parts, 'web');
    for (const [node, module, kind] of [
      ['broker', 'mq', 'amqp'],
      ['db', 'pg', 'sql'],
    ] as const) {
      await client.call('POST', '/nodes', { node });
      await client.call('PUT', `/nodes/${node}/modules/${module}`, { provides: kind });
    }
    await client.call('PUT', '/nodes/web/modules/app', {});
    for (const [node, module] of [
      ['broker', 'mq'],
      ['db', 'pg'],
    ])
      await client.call('POST', '/nodes/web/modules/app/consumes', { provider: { node, module } });
    await client.call('POST', '/push', { behind: true });

    const waiting = await rows();
    expect(waiting.get('web')?.waiting).toEqual({ relations: 2, nodes: 2, for: ['broker', 'db'] });
    // a row with nothing waiting is as it was before waiting was shown
    expect(Object.keys(waiting.get('broker') ?? {})).not.toContain('waiting');
    expect((await client.call<NodeDetails>('GET', '/nodes/web')).waiting).toEqual(
      waiting.get('web')?.waiting,
    );
    const before = await summaries();
    expect(before.kept.waiting).toEqual({ nodes: 1, relations: 2 });
    expect({ ...before.kept, exact: true }).toEqual(before.counted);

    const text = await mesh(['status']);
    expect(text.stdout).toMatch(/^web .*2 relations waiting for broker, db to enrol$/m);
    expect(text.stdout).toMatch(/^broker .*last heard never$/m);
    const json = await mesh(['status', '--json']);
    expect(JSON.parse(json.stdout).nodes.find((s: NodeStatus) => s.node === 'web').waiting).toEqual({
      relations: 2,
      nodes: 2,
      for: ['broker', 'db'],
    });
    expect((await mesh(['node', 'show', 'web'])).stdout).toMatch(
      /^ {2}waiting {5}2 relations waiting for broker, db to enrol$/m,
    );
    expect((await mesh(['node', 'show', 'broker'])).stdout).not.toContain('waiting');
    expect((await mesh(['status', '--summary'])).stdout).toContain(
      '2 relations wait for an enrolment on 1 node; mesh status shows which',
    );

    await enrolNode(parts, 'broker');
    await enrolled('broker');
    expect((await rows()).get('web')?.waiting).toEqual({ relations: 1, nodes: 1, for: ['db'] });
    expect((await summaries()).kept.waiting).toEqual({ nodes: 1, relations: 1 });

    await enrolNode(parts, 'db');
    await enrolled('db');
    expect(Object.keys((await rows()).get('web') ?? {})).not.toContain('waiting');
    const after = await summaries();
    expect(Object.keys(after.kept)).not.toContain('waiting');
    expect({ ...after.kept, exact: true }).toEqual(after.counted);
    expect(await client.call<Summary>('POST', '/summary/rebuild')).toEqual(after.kept);
    expect(errors).toEqual([]);
  });

  it('names at most ten nodes on a row, and says how many more', { timeout: 120_000 }, async () => {
    await addEnrolledNode(parts, 'many');
    await parts.meshService.assign('many', 'app', null, localActor());
    const providers = Array.from({ length: 12 }, (_, i) => `p${String(i).padStart(2, '0')}`);
    for (const node of providers) {
      await parts.meshService.addNode(node, {}, localActor());
      await parts.meshService.assign(node, 'svc', 'http', localActor());
      await parts.meshService.consume({ node: 'many', module: 'app' }, { node, module: 'svc' }, localActor());
    }
    await parts.pushFlow.push({ node: 'many' });

    const row = (await rows()).get('many');
    expect(row?.waiting).toEqual({ relations: 12, nodes: 12, for: providers.slice(0, 10) });
    expect((await mesh(['status'])).stdout).toMatch(
      /^many .*12 relations waiting for p00, .*, p09 and 2 more to enrol$/m,
    );
    const { kept } = await summaries();
    expect(kept.waiting).toEqual({ nodes: 1, relations: 12 });
  });
});
