import { randomBytes } from 'node:crypto';
import { ApiClient } from '../lib/clients/http/api-client.ts';
import { startLocalRuntime } from '../lib/local/local-runtime.ts';
import { makeDynamoDBClient } from '../lib/server/adapters/aws-clients.ts';
import { documentClient } from '../lib/server/adapters/dynamodb/requests.ts';
import { openBrowser } from '../test/support/browser.ts';
import { nodeName, seed, seedItems } from './push.bench.ts';
import { benchEnvironment } from './support/environment.ts';
import { median, percentile, sample } from './support/stats.ts';
import type { BenchTable } from './support/table.ts';

/**
 * The console with a seeded mesh (push.bench.ts's: every node carries three modules and was sent
 * its declaration, one in ten runs a broker, one in ten consumes one on another node), fifty
 * nodes then marked behind by an assignment: how long each read route takes, and how long the
 * page takes from navigation to the mesh drawn, in Debian's Chromium.
 */
const size = Number(process.env.MESH_BENCH_CONSOLE_NODES ?? 1000);

export async function run(): Promise<BenchTable[]> {
  const environment = await benchEnvironment();
  const runtime = await startLocalRuntime({
    port: 0,
    given: environment.emulators.endpoints,
    resourcePrefix: `bench-console-${randomBytes(3).toString('hex')}`,
    logLevel: 'ERROR',
    consoleRefreshSeconds: 3600,
  });
  const browser = await openBrowser({ width: 1600, height: 1000 });
  try {
    const setup = makeDynamoDBClient(runtime.config);
    await seed(documentClient(setup), runtime.config.inventoryTable, seedItems(size));
    setup.destroy();
    const api = new ApiClient(runtime.url);
    for (let i = 0; i < 50; i += 1) await api.call('PUT', `/nodes/${nodeName(i * 17)}/modules/sidecar`, {});
    await api.call('POST', '/push', { node: nodeName(5) });

    const routes = [
      '/graph',
      '/nodes',
      `/nodes/${nodeName(10)}`,
      '/status',
      '/pushes?limit=25',
      '/dead-letters?limit=50',
    ];
    const routeRows: Array<Array<string | number>> = [];
    for (const route of routes) {
      let bytes = 0;
      const times = await sample(
        7,
        async () => {
          const answer = await fetch(`${runtime.url}${route}`);
          bytes = (await answer.arrayBuffer()).byteLength;
          if (!answer.ok) throw new Error(`${route} answered ${answer.status}`);
        },
        1,
      );
      routeRows.push([`GET ${route}`, median(times), percentile(times, 90), Math.round(bytes / 1024)]);
    }

    const page = await browser.context.newPage();
    const firstRenders: number[] = [];
    for (let i = 0; i < 5; i += 1) {
      await page.goto(`${runtime.url}/console`);
      await page.waitForSelector('body[data-state="ready"]');
      firstRenders.push(Number(await page.locator('body').getAttribute('data-first-render-ms')));
    }
    // past 200 nodes the whole graph is drawn only when asked for
    await page.click('#whole-mesh');
    await page.waitForSelector('[data-box]');
    const boxes = await page.locator('[data-box]').count();
    const timed = async (act: () => Promise<unknown>) => {
      const started = performance.now();
      await act();
      return performance.now() - started;
    };
    // the graph's first page (fleet.js's firstPageNodes): what is loaded before any search or "more"
    const loaded = Math.min(size, 400);
    const ungroup = await timed(async () => {
      await page.click('#grouped');
      // the page's policy refuses a script given as text (waitForFunction's), so a selector says when
      await page.locator(`[data-node="${nodeName(loaded - 1)}"]`).waitFor();
    });
    const search = await timed(async () => {
      await page.fill('#search', nodeName(10));
      await page.locator('[data-box]').nth(9).waitFor({ state: 'detached' });
    });
    const details = await timed(async () => {
      await page.click(`[data-node="${nodeName(10)}"]`);
      await page.waitForSelector(`#node-title:has-text("${nodeName(10)}")`);
    });
    return [
      {
        title: `console read routes, ${size} nodes on DynamoDB Local (ms per request, 7 after 1 warm-up)`,
        columns: ['route', 'median ms', 'p90 ms', 'answer KiB'],
        rows: routeRows,
        notes: [
          '/graph, /nodes and /status read every node’s partition (16 at a time); the others one partition each',
        ],
      },
      {
        title: `console in Chromium, ${size} nodes`,
        columns: ['step', 'median ms', 'max ms'],
        rows: [
          [
            'first render (navigation → fleet tiles and the table’s first page)',
            median(firstRenders),
            Math.max(...firstRenders),
          ],
          [`ungroup: every loaded node drawn (${loaded} boxes)`, ungroup, ungroup],
          ['search one node: it and its neighbours drawn', search, search],
          ['click a node: its details shown', details, details],
        ],
        notes: [
          `grouped by modules, the mesh is ${boxes} boxes; first render is 5 loads of the page, each reading /summary, /nodes?limit=50, /pushes, /rollouts and /dead-letters; then "draw the whole mesh" reads /graph`,
        ],
      },
    ];
  } finally {
    await browser.close();
    await runtime.stop();
    await environment.stop();
  }
}
