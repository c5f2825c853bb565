import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { nodeName, seed, seedItems } from '../../bench/push.bench.ts';
import { ExitCode } from '../../lib/clients/common/exit-codes.ts';
import { ApiClient } from '../../lib/clients/http/api-client.ts';
import { type RunningApi, startLocalApi } from '../../lib/local/http-server.ts';
import { localPartsFor } from '../../lib/local/parts.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import { documentClient, type Item } from '../../lib/server/adapters/dynamodb/requests.ts';
import { DynamoDBMeshViewReader } from '../../lib/server/adapters/views/mesh-view-reader.ts';
import { DynamoDBStatusReader } from '../../lib/server/adapters/views/status-reader.ts';
import { DynamoDBViewPages } from '../../lib/server/adapters/views/view-pages.ts';
import { jsonBytes, pageBytes } from '../../lib/server/core/answer-pages.ts';
import { matchesSelector, parseSelector } from '../../lib/server/core/mesh/labels.ts';
import type { NodeStatus } from '../../lib/server/core/views/ports.ts';
import { type ListedNode, listedNodes, type MeshGraph } from '../../lib/server/core/views/views.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
import { lagIndexes } from '../support/lagging-indexes.ts';
import { runMesh } from '../support/processes.ts';
import { provisionTestResources } from '../support/resources.ts';
import { fleetStateItems } from '../support/view-seeds.ts';

/**
 * The views a page at a time (lib/server/adapters/views/view-pages.ts) against today's whole-mesh
 * reads of the same seeded mesh: every node once across the pages, each filter the same nodes
 * as the whole read filtered, cursors checked, answers bounded.
 */
const size = 800;
// Walks of 800 nodes, and the whole reads they are compared with, on two cores shared by others.
vi.setConfig({ testTimeout: 600_000 });
const region = process.env.AWS_REGION ?? 'us-east-1';
let config: MeshConfig;
let parts: Parts;
let api: RunningApi;
let client: ApiClient;
let whole: NodeStatus[];
let wholeGraph: MeshGraph;

/** Labels on some nodes, as the mesh file gives them (mesh-items.ts's node item). */
const labelled = (items: Item[]) =>
  items.map((item) => {
    if (item.sk !== 'node') return item;
    const i = Number(String(item.node).slice('node-'.length));
    return i % 3 === 0 ? item : { ...item, labels: { role: i % 3 === 1 ? 'web' : 'db', zone: `z${i % 4}` } };
  });

beforeAll(async () => {
  config = await provisionTestResources('viewpages');
  parts = localPartsFor(config);
  api = await startLocalApi({ port: 0, parts });
  client = new ApiClient(api.url);
  // Seeding and the whole-mesh reads are long on a loaded machine: no 3 s request timeout here.
  const setup = new DynamoDBClient({ region, maxAttempts: 10, requestHandler: { requestTimeout: 120_000 } });
  const names = Array.from({ length: size }, (_, i) => nodeName(i));
  await seed(documentClient(setup), config.inventoryTable, [
    ...labelled(seedItems(size)),
    ...fleetStateItems(names),
  ]);
  const reader = new DynamoDBClient({ region, maxAttempts: 10, requestHandler: { requestTimeout: 120_000 } });
  const table = { client: documentClient(reader), tableName: config.inventoryTable };
  whole = await new DynamoDBStatusReader(table).status();
  wholeGraph = await new DynamoDBMeshViewReader(table).graph();
  setup.destroy();
  reader.destroy();
}, 600_000);

afterAll(async () => {
  await api?.stop();
});

type Answer<T> = { readonly nodes: T[]; readonly edges?: MeshGraph['edges']; readonly next?: string };

/** Every page of a route, with each answer's size. */
async function walk<T extends { node: string }>(route: string, query: Record<string, string>) {
  const pages: Array<Answer<T> & { bytes: number }> = [];
  let cursor: string | undefined;
  do {
    const asked = new URLSearchParams({ ...query, ...(cursor ? { cursor } : {}) });
    const answer = await client.send('GET', `${route}?${asked}`);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const body = answer.body as Answer<T>;
    pages.push({ ...body, bytes: jsonBytes(body) });
    cursor = body.next;
  } while (cursor);
  return { pages, nodes: pages.flatMap((page) => page.nodes) };
}

const names = (nodes: readonly { node: string }[]) => nodes.map((n) => n.node);

describe('a page at a time', () => {
  it('walks /status: every node exactly once, in name order, as the whole read has them', async () => {
    const { pages, nodes } = await walk<NodeStatus>('/status', { limit: '37' });

    expect(whole).toHaveLength(size);
    expect(nodes).toEqual(whole);
    expect(new Set(names(nodes)).size).toBe(size);
    expect(pages).toHaveLength(Math.ceil(size / 37));
    for (const page of pages.slice(0, -1)) expect(page.nodes).toHaveLength(37);
  });

  it('walks /graph and /nodes to the whole graph and list', async () => {
    const graph = await walk<MeshGraph['nodes'][number]>('/graph', { limit: '90' });
    const list = await walk<ListedNode>('/nodes', { limit: '250' });

    expect(graph.nodes).toEqual(wholeGraph.nodes);
    expect(graph.pages.flatMap((page) => page.edges ?? [])).toEqual(wholeGraph.edges);
    expect(list.nodes).toEqual(listedNodes(wholeGraph));
  });

  it('answers a mesh of up to a thousand nodes whole without a limit, as before pages', async () => {
    const status = (await client.send('GET', '/status')).body as Answer<NodeStatus>;
    const graph = (await client.send('GET', '/graph')).body as MeshGraph & { next?: string };

    expect(status).toEqual({ nodes: whole });
    expect(graph).toEqual(wholeGraph);
  });
});

describe('filters', () => {
  const cases: Array<[string, Record<string, string>, (s: NodeStatus, modules: string[]) => boolean]> = [
    ['behind', { behind: 'true' }, (s) => s.behind],
    ['failed', { failed: 'true' }, (s) => s.reportState === 'failed'],
    ['offline', { offline: 'true' }, (s) => s.online === false],
    ['module', { module: 'broker' }, (_s, modules) => modules.includes('broker')],
    [
      'on',
      { on: 'role=web,zone!=z1' },
      (s) => matchesSelector(parseSelector('role=web,zone!=z1'), s.labels ?? {}),
    ],
    ['prefix', { prefix: 'node-001' }, (s) => s.node.startsWith('node-001')],
    [
      'offline and on',
      { offline: 'true', on: 'role' },
      (s) => s.online === false && s.labels?.role !== undefined,
    ],
  ];
  const modulesOf = (node: string) =>
    wholeGraph.nodes.find((n) => n.node === node)?.modules.map((m) => m.module) ?? [];

  it.each(cases)('%s: the same nodes as the whole read filtered', async (_name, query, holds) => {
    const expected = whole.filter((s) => holds(s, modulesOf(s.node)));
    const { nodes } = await walk<NodeStatus>('/status', { ...query, limit: '7' });

    expect(expected.length).toBeGreaterThan(0);
    expect(nodes).toEqual(expected);
  });

  it('behind as the CLI shows it: mesh status --behind lists the behind nodes alone', async () => {
    const run = await runMesh(api.url, ['status', '--behind']);
    const expected = names(whole.filter((s) => s.behind));

    expect(run.code).toBe(ExitCode.ok);
    const listed = run.stdout
      .split('\n')
      .filter((line) => line.startsWith('node-'))
      .map((line) => line.split(' ')[0]);
    expect(listed).toEqual(expected);
  });
});

describe('cursors and bounds', () => {
  it('refuses a cursor it did not give, or one given for other filters, with a clear 400', async () => {
    const behind = (await client.call<Answer<NodeStatus>>('GET', '/status?behind=true&limit=2')).next;
    const answers = await Promise.all(
      [
        '/status?cursor=not-a-cursor',
        `/status?cursor=${Buffer.from('{"v":1,"after":"../x","filter":""}').toString('base64url')}`,
        `/status?cursor=${behind}`,
        `/nodes?failed=true&cursor=${behind}`,
        '/graph?limit=0',
        '/graph?limit=1001',
        '/status?behind=yes',
        '/status?on=role%3D%3D',
        '/status?colour=red',
      ].map((route) => client.send('GET', route)),
    );

    expect(behind).toBeTypeOf('string');
    expect(answers.map((a) => [a.status, (a.body as { error: { code: string } }).error.code])).toEqual([
      [400, 'bad_cursor'],
      [400, 'bad_cursor'],
      [400, 'bad_cursor'],
      [400, 'bad_cursor'],
      [400, 'invalid_request'],
      [400, 'invalid_request'],
      [400, 'invalid_request'],
      [400, 'invalid_request'],
      [400, 'invalid_request'],
    ]);
    expect((answers[2]?.body as { error: { message: string } } | undefined)?.error.message).toMatch(
      /given for other filters \(behind\)/,
    );
  });

  it('cuts a page short at its byte bound and walks on from there, losing no node', async () => {
    const bound = 20_000;
    const pages = new DynamoDBViewPages({
      client: documentClient(makeDynamoDBClient({ region })),
      tableName: config.inventoryTable,
      pageBytes: bound,
    });
    const seen: string[] = [];
    const sizes: number[] = [];
    let after: string | undefined;
    do {
      const page = await pages.graphPage({ filter: {}, limit: 1000, ...(after ? { after } : {}) });
      sizes.push(jsonBytes({ nodes: page.nodes, edges: page.edges }));
      seen.push(...names(page.nodes));
      after = page.next ?? undefined;
    } while (after);

    expect(seen).toEqual(names(wholeGraph.nodes));
    expect(sizes.length).toBeGreaterThan(10);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(bound + 100);
    expect(pageBytes).toBeLessThanOrEqual(1024 * 1024);
  });
});

describe('mesh status on 800 nodes', () => {
  it('prints each page as it comes, saying so between pages; --json stays one document', async () => {
    const run = await runMesh(api.url, ['status']);
    const json = await runMesh(api.url, ['--json', 'status']);

    expect(run.code).toBe(ExitCode.ok);
    // stdout and stderr reach the test through two pipes, so their order between them is not
    // kept: the pages are shown by the progress said after each (stderr) and the nodes in order (stdout).
    const progress = run.output.split('\n').filter((line) => line.includes('reading on'));
    expect(progress.map((line) => line.replace(/^.*status: /, ''))).toEqual([
      'page 1, 250 nodes so far; reading on…',
      'page 2, 500 nodes so far; reading on…',
      'page 3, 750 nodes so far; reading on…',
    ]);
    const printed = run.stdout.split('\n').filter((line) => line.startsWith('node-'));
    expect(printed.map((line) => line.split(' ')[0])).toEqual(names(whole));
    expect(JSON.parse(json.stdout)).toEqual({ nodes: whole });
  });
});

describe('while the mesh changes (last: the tests above compare with the mesh as seeded)', () => {
  it('follows a failed report and an offline node onto and off their lists', async () => {
    const node = nodeName(2);
    const failed = () => client.call<Answer<NodeStatus>>('GET', `/status?failed=true&prefix=${node}`);
    const offline = () => client.call<Answer<NodeStatus>>('GET', `/status?offline=true&prefix=${node}`);
    const report = (sequence: number, state: 'failed' | 'applied') =>
      parts.reports.recordReport(
        { node, sequence, state, revision: 1, sentAt: '2026-01-02T00:00:00.000Z' },
        { heardAt: new Date().toISOString(), queuedAt: new Date().toISOString() },
      );
    const presence = (state: 'connected' | 'disconnected', atMs: number) =>
      parts.presence.recordPresence({ node, state, atMs, version: atMs });

    await report(10, 'failed');
    await presence('disconnected', Date.now());
    const on = [names((await failed()).nodes), names((await offline()).nodes)];
    await report(11, 'applied');
    await presence('connected', Date.now() + 1000);
    const off = [names((await failed()).nodes), names((await offline()).nodes)];

    expect(on).toEqual([[node], [node]]);
    expect(off).toEqual([[], []]);
  });
  it('sees a node added a moment ago on the first page, though the index has not caught up', async () => {
    const dynamodb = makeDynamoDBClient({ region });
    const lag = lagIndexes(dynamodb);
    const lagging = await startLocalApi({ port: 0, parts: localPartsFor(config, { clients: { dynamodb } }) });
    try {
      await client.call('POST', '/nodes', { node: 'aaa-fresh' });
      const page = await new ApiClient(lagging.url).call<Answer<NodeStatus>>('GET', '/status?limit=5');
      expect(names(page.nodes)[0]).toBe('aaa-fresh');
      expect(lag.staleReads()).toBeGreaterThan(0);
    } finally {
      await lagging.stop();
    }
  });
});
