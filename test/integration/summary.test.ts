import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../../lib/clients/http/api-client.ts';
import { type RunningApi, startLocalApi } from '../../lib/local/http-server.ts';
import { localPartsFor } from '../../lib/local/parts.ts';
import { type RunningStreamSource, startStreamSource } from '../../lib/local/stream-source.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import {
  type ReportModules,
  type Summary,
  summaryFromFullRead,
} from '../../lib/server/core/summary/summary.ts';
import type { NodeStatus } from '../../lib/server/core/views/ports.ts';
import type { MeshGraph, NodeDetails } from '../../lib/server/core/views/views.ts';
import { functionSpecs } from '../../lib/server/functions/table.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
import { addEnrolledNode } from '../support/enrolled-nodes.ts';
import { provisionTestResources } from '../support/resources.ts';

/**
 * The summary kept by the stream aggregator agrees with a full read: a seeded random walk
 * changes the mesh (nodes added and removed, enrolled and disenrolled, modules assigned and
 * upgraded, pushes, reports applied and failed, hosts online and offline) against DynamoDB Local
 * with the aggregator fed by the table's stream, and after the stream is drained `GET /summary`
 * equals the summary counted from `GET /status`, the graph and each failed node's report.
 */
let config: MeshConfig;
let parts: Parts;
let api: RunningApi;
let client: ApiClient;
let source: RunningStreamSource;
const errors: Error[] = [];
const dynamodb = makeDynamoDBClient({ region: process.env.AWS_REGION ?? 'us-east-1' });
const aggregator = functionSpecs.find((spec) => spec.trigger === 'stream');

function startAggregator(): RunningStreamSource {
  if (aggregator?.trigger !== 'stream') throw new Error('no stream function');
  return startStreamSource({
    dynamodb,
    config,
    tableName: config.inventoryTable,
    handler: aggregator.handler(parts),
    functionName: aggregator.name,
    idleMs: 50,
    onError: (error) => {
      errors.push(error);
      if (errors.length <= 5) process.stderr.write(`stream source: ${error.name}: ${error.message}\n`);
    },
  });
}

beforeAll(async () => {
  config = await provisionTestResources('summary', {}, { streams: true });
  parts = localPartsFor(config);
  api = await startLocalApi({ port: 0, parts });
  client = new ApiClient(api.url);
  source = startAggregator();
});

afterAll(async () => {
  await source?.stop();
  await api?.stop();
  dynamodb.destroy();
});

/** A small deterministic generator (mulberry32), so a failing walk is the same walk again. */
function random(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T };
}

async function fullRead(): Promise<Summary> {
  const { nodes } = await client.call<{ nodes: NodeStatus[] }>('GET', '/status');
  const graph = await client.call<MeshGraph>('GET', '/graph');
  const failed = new Map<string, number | null>();
  const reported = new Map<string, ReportModules>();
  for (const status of nodes.filter((s) => s.reportState !== null)) {
    const { report } = await client.call<NodeDetails>('GET', `/nodes/${status.node}`);
    if (status.reportState === 'failed') failed.set(status.node, report?.revision ?? null);
    reported.set(status.node, {
      ...(report?.appliedModules ? { applied: report.appliedModules } : {}),
      ...(report?.failedModules ? { failed: report.failedModules } : {}),
    });
  }
  return summaryFromFullRead(
    nodes,
    graph.nodes,
    (node) => failed.get(node) ?? null,
    (node) => reported.get(node) ?? {},
  );
}

/** A report's state and, as a host sends them with applied and failed, the declaration's modules. */
const reported = (
  state: 'applied' | 'failed' | 'applying',
  modules: Record<string, string | null>,
): { state: typeof state; modules?: Record<string, string | null> } =>
  state === 'applying' ? { state } : { state, modules };

async function walk(seed: number, steps: number): Promise<Record<string, number>> {
  const rng = random(seed);
  const names = ['n-a', 'n-b', 'n-c', 'n-d', 'n-e', 'n-f', 'n-g', 'n-h'];
  const modules = ['app', 'db', 'cache'];
  const sequences = new Map<string, number>();
  const connections = new Map<string, number>();
  const done: Record<string, number> = {};
  let clock = Date.now();
  const actions: Record<string, (node: string) => Promise<unknown>> = {
    // labelled by name, so the walk's draws are the same with labels as without
    add: (node) =>
      client.call('POST', '/nodes', { node, labels: { role: node.charCodeAt(2) % 2 ? 'web' : 'db' } }),
    enrolled: (node) => addEnrolledNode(parts, node),
    remove: (node) => client.call('DELETE', `/nodes/${node}?cascade=true`),
    disenrol: (node) => client.call('DELETE', `/nodes/${node}/enrolment`),
    assign: (node) => client.call('PUT', `/nodes/${node}/modules/${rng.pick(modules)}`, {}),
    unassign: (node) => client.call('DELETE', `/nodes/${node}/modules/${rng.pick(modules)}`),
    upgrade: () =>
      parts.moduleVersions.setModuleVersion(
        rng.pick(modules),
        rng.pick(['1.0.0', '1.1.0', '2.0.0']),
        localActor(),
      ),
    push: (node) => client.call('POST', '/push', { node }),
    report: async (node) => {
      const { revision: sent, declaration } = await client.call<{
        revision: number;
        declaration: { modules: Array<{ name: string; version: string | null }> };
      }>('GET', `/nodes/${node}/declaration`);
      // what a host names: the modules of the declaration it applied or failed
      const modules = Object.fromEntries(declaration.modules.map((m) => [m.name, m.version]));
      const sequence = (sequences.get(node) ?? 0) + 1;
      sequences.set(node, sequence);
      clock = Math.max(clock + 1000, Date.now());
      const at = new Date(clock).toISOString();
      await parts.reports.recordReport(
        {
          node,
          sequence,
          ...reported(rng.pick(['applied', 'applied', 'failed', 'applying'] as const), modules),
          revision: sent,
          sentAt: at,
        },
        { queuedAt: at, heardAt: at },
      );
    },
    connect: (node) => {
      const version = (connections.get(node) ?? 0) + 1;
      connections.set(node, version);
      clock = Math.max(clock + 1000, Date.now());
      return parts.presence.recordPresence({ node, state: 'connected', atMs: clock, version });
    },
    disconnect: (node) => {
      clock = Math.max(clock + 1000, Date.now());
      return parts.presence.recordPresence({
        node,
        state: 'disconnected',
        atMs: clock,
        version: connections.get(node) ?? 0,
      });
    },
  };
  const weighted = [
    ...Array(4).fill('add'),
    ...Array(3).fill('enrolled'),
    'remove',
    'disenrol',
    ...Array(3).fill('assign'),
    'unassign',
    'upgrade',
    ...Array(3).fill('push'),
    ...Array(4).fill('report'),
    ...Array(2).fill('connect'),
    'disconnect',
  ] as const;
  for (let step = 0; step < steps; step += 1) {
    const action = rng.pick(weighted);
    const node = rng.pick(names);
    try {
      await (actions[action] as (node: string) => Promise<unknown>)(node);
      done[action] = (done[action] ?? 0) + 1;
    } catch {
      // A refusal (no such node, not sent yet, stale) changes nothing; the walk goes on.
      done[`${action} refused`] = (done[`${action} refused`] ?? 0) + 1;
    }
  }
  return done;
}

/**
 * Ends the walk with a host that applied a declaration and then failed the next (the walk's own
 * may all have been undone by then), so the counts per module version have one of each.
 */
async function endWithAFailingHost(): Promise<void> {
  const node = 'n-last';
  await client.call('POST', '/nodes', { node });
  await client.call('PUT', `/nodes/${node}/modules/app`, {});
  await client.call('POST', '/push', { node });
  const { revision, declaration } = await client.call<{
    revision: number;
    declaration: { modules: Array<{ name: string; version: string | null }> };
  }>('GET', `/nodes/${node}/declaration`);
  const modules = Object.fromEntries(declaration.modules.map((m) => [m.name, m.version]));
  for (const [sequence, state] of [
    [1, 'applied'],
    [2, 'failed'],
  ] as const) {
    const at = new Date(Date.now() + sequence * 1000).toISOString();
    await parts.reports.recordReport(
      { node, sequence, state, revision, modules, sentAt: at },
      { queuedAt: at, heardAt: at },
    );
  }
}

describe('the summary kept from the stream', () => {
  it('agrees with a full read after a random walk of changes', { timeout: 400_000 }, async () => {
    const started = Date.now();
    const done = await walk(22, 120);
    await endWithAFailingHost();
    const walked = Date.now();
    await source.caughtUp();
    console.log(`walk ${walked - started} ms, drained ${Date.now() - walked} ms`, done);

    const summary = await client.call<Summary>('GET', '/summary');
    const counted = await fullRead();

    expect({ summary, errors: errors.map((e) => e.message) }).toEqual({ summary: counted, errors: [] });
    // the walk reached every kind of change it draws from
    expect(
      Object.keys(done)
        .filter((key) => !key.endsWith('refused'))
        .sort(),
    ).toEqual(
      [
        'add',
        'assign',
        'connect',
        'disconnect',
        'disenrol',
        'enrolled',
        'push',
        'remove',
        'report',
        'unassign',
        'upgrade',
      ].sort(),
    );
    expect(summary.nodes).toBeGreaterThan(0);
    expect(summary.labels?.[0]?.key).toBe('role');
    // the hosts' reports named their modules: counted applied and failed per module version
    expect(summary.modules.some((m) => m.applied > 0)).toBe(true);
    expect(summary.modules.some((m) => m.failed > 0)).toBe(true);
    expect(errors).toEqual([]);
  });

  it('counts a change once when the stream is read again from its start', { timeout: 60_000 }, async () => {
    const before = await client.call<Summary>('GET', '/summary');

    // a second event source over the same stream: every record is delivered again
    const again = startAggregator();
    await again.caughtUp();
    await again.stop();

    expect(await client.call<Summary>('GET', '/summary')).toEqual(before);
  });

  it('is counted again from a full read by the rebuild, the same', { timeout: 60_000 }, async () => {
    const before = await client.call<Summary>('GET', '/summary');

    const rebuilt = await client.call<Summary>('POST', '/summary/rebuild');

    expect(rebuilt).toEqual(before);
    expect(await client.call<Summary>('GET', '/summary')).toEqual(before);
  });

  it('is what mesh status --summary prints, and --json answers as GET /summary', {
    timeout: 60_000,
  }, async () => {
    const summary = await client.call<Summary>('GET', '/summary');

    const json = await mesh(['status', '--summary', '--json']);
    const text = await mesh(['status', '--summary']);
    const refused = await mesh(['status', '--summary', '--on', 'role=web', '--json']);

    expect(JSON.parse(json.stdout)).toEqual(summary);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(
      `nodes ${summary.nodes}  enrolled ${summary.enrolled}  online ${summary.online}  behind ${summary.behind}`,
    );
    if (summary.revisions.length > 0) expect(text.stdout).toMatch(/^revision +applied +failed$/m);
    expect(refused.code).toBe(2);
    expect(JSON.parse(refused.stderr.trim().split('\n')[0] ?? '{}')).toMatchObject({
      code: 'cli.usage',
      argument: '--on',
    });
  });
});

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
