import { cliPageNodes } from '../../lib/clients/cli/view-pages.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import { documentClient } from '../../lib/server/adapters/dynamodb/requests.ts';
import { DynamoDBMeshViewReader } from '../../lib/server/adapters/views/mesh-view-reader.ts';
import { DynamoDBStatusReader } from '../../lib/server/adapters/views/status-reader.ts';
import { jsonBytes } from '../../lib/server/core/answer-pages.ts';
import { listedNodes } from '../../lib/server/core/views/views.ts';
import { runMesh } from '../../test/support/processes.ts';
import type { ScaleMesh } from '../scale.bench.ts';
import { median, sample } from '../support/stats.ts';
import type { BenchTable } from '../support/table.ts';

/** AWS's bounds on one request of `mesh status`: API Gateway's 29 s, Lambda's 6 MB answer. */
const gatewaySeconds = 29;
const lambdaAnswerBytes = 6 * 1024 * 1024;
const kib = (bytes: number) => Math.round(bytes / 1024);
/** Today's whole-mesh reads are cut off here: past 29 s they already fail on AWS. */
const capSeconds = Number(process.env.MESH_BENCH_SCALE_TODAY_CAP_SECONDS ?? 180);

type Asked = { readonly ms: number; readonly bytes: number; readonly next?: string };

/**
 * The views at scale (issue 22, parts 1, 3 and 5): a filtered page, a paged walk of /status, the
 * console's first render, and `mesh status` paged against AWS's bounds, beside today's
 * whole-mesh reads of the same store.
 */
export async function viewSection(mesh: ScaleMesh): Promise<BenchTable[]> {
  const { size, runtime } = mesh;
  const ask = async (route: string): Promise<Asked> => {
    const started = performance.now();
    const answer = await fetch(`${runtime.url}${route}`);
    const text = await answer.text();
    const ms = performance.now() - started;
    if (!answer.ok) throw new Error(`${route} answered ${answer.status}: ${text.slice(0, 200)}`);
    const { next } = JSON.parse(text) as { next?: string };
    return { ms, bytes: Buffer.byteLength(text), ...(next ? { next } : {}) };
  };
  /** Median of 7 after 1 warm-up, and the largest answer. */
  const timed = async (route: string) => {
    let bytes = 0;
    const times = await sample(
      7,
      async () => {
        bytes = Math.max(bytes, (await ask(route)).bytes);
      },
      1,
    );
    return { ms: median(times), bytes };
  };
  const walk = async (route: string, limit: number) => {
    const started = performance.now();
    let slowest = 0;
    let largest = 0;
    let pages = 0;
    let cursor: string | undefined;
    do {
      const page = await ask(`${route}?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
      slowest = Math.max(slowest, page.ms);
      largest = Math.max(largest, page.bytes);
      pages += 1;
      cursor = page.next;
    } while (cursor);
    return { ms: performance.now() - started, slowest, largest, pages };
  };

  const rows: Array<Array<string | number>> = [];
  /** A measure that fails (a request past the local server's 29 s, say) is a row, not the end of the run. */
  const row = async (what: string, measure: () => Promise<Array<string | number>>) => {
    try {
      rows.push([what, ...(await measure())]);
    } catch (error) {
      rows.push([`${what} (failed: ${(error as Error).message.slice(0, 120)})`, '', '', '']);
    }
  };
  for (const route of [
    '/status?behind=true&limit=100',
    '/status?failed=true&limit=100',
    '/nodes?offline=true&limit=100',
    '/graph?module=broker&limit=100',
  ])
    await row(`filtered page GET ${route}`, async () => {
      const { ms, bytes } = await timed(route);
      return [Math.round(ms), kib(bytes), 1];
    });
  const walks = size > 20_000 ? 1 : 3;
  await row(
    `paged walk of GET /status, ${cliPageNodes} a page as mesh status asks (${walks === 1 ? 'once' : `median of ${walks}`})`,
    async () => {
      const paged: Array<Awaited<ReturnType<typeof walk>>> = [];
      for (let i = 0; i < walks; i += 1) paged.push(await walk('/status', cliPageNodes));
      return [
        Math.round(median(paged.map((p) => p.ms))),
        kib(Math.max(...paged.map((p) => p.largest))),
        (paged[0] as Awaited<ReturnType<typeof walk>>).pages,
      ];
    },
  );

  let tableRows = 0;
  await row(
    'console first render (navigation → fleet tiles and the table’s first page; 5 loads)',
    async () => {
      const page = await mesh.browser.context.newPage();
      try {
        const renders: number[] = [];
        for (let i = 0; i < 5; i += 1) {
          await page.goto(`${runtime.url}/console`);
          await page.waitForSelector('body[data-state="ready"]', { timeout: 120_000 });
          renders.push(Number(await page.locator('body').getAttribute('data-first-render-ms')));
        }
        tableRows = await page.locator('#nodes-rows tr').count();
        return [Math.round(median(renders)), '', 3];
      } finally {
        await page.close();
      }
    },
  );

  // `mesh status` as operators run it: the CLI's pages, each one request, held to AWS's bounds.
  const cli = await walk('/status', cliPageNodes).catch((error: Error) => ({
    ms: Number.NaN,
    slowest: Number.NaN,
    largest: Number.NaN,
    pages: `failed: ${error.message.slice(0, 80)}`,
  }));
  const cliStarted = performance.now();
  const run = await runMesh(runtime.url, ['status']);
  const cliMs = performance.now() - cliStarted;
  const printed = run.stdout.split('\n').filter((line) => line.startsWith('node-')).length;
  const exitedNote =
    run.code === 0 ? '' : `, exited ${run.code}: ${run.output.trim().split('\n').at(-1)?.slice(0, 100)}`;

  // Today's way, last, since a read cut off at its cap runs on: the whole-mesh readers the
  // routes used before pages, on the same store.
  const client = makeDynamoDBClient(runtime.config);
  const table = { client: documentClient(client), tableName: runtime.config.inventoryTable };
  let exceeded = false;
  const today = async (what: string, read: () => Promise<unknown>) => {
    if (exceeded) {
      rows.push([`today: ${what} (not run: the read above passed ${capSeconds} s)`, '', '', '']);
      return;
    }
    const started = performance.now();
    const reading = read();
    reading.catch(() => undefined);
    const answer = await Promise.race([
      reading,
      new Promise<'cap'>((resolve) => setTimeout(() => resolve('cap'), capSeconds * 1000).unref()),
    ]).catch((error: Error) => error);
    const ms = performance.now() - started;
    if (answer === 'cap') {
      exceeded = true;
      rows.push([
        `today: ${what} (exceeded ${capSeconds} s, over 29 s: fails on AWS)`,
        `>${capSeconds * 1000}`,
        '',
        '',
      ]);
      return;
    }
    if (answer instanceof Error) {
      rows.push([`today: ${what} (failed after ${Math.round(ms)} ms: ${answer.message})`, '', '', '']);
      return;
    }
    const bytes = jsonBytes(answer);
    const over = [ms > gatewaySeconds * 1000 ? 'over 29 s' : '', bytes > lambdaAnswerBytes ? 'over 6 MB' : '']
      .filter(Boolean)
      .join(', ');
    rows.push([`today: ${what}${over ? ` (${over}: fails on AWS)` : ''}`, Math.round(ms), kib(bytes), '']);
  };
  await today('GET /status, every partition (once)', async () => ({
    nodes: await new DynamoDBStatusReader(table).status(),
  }));
  await today('GET /graph, every partition, the console’s first read (once)', () =>
    new DynamoDBMeshViewReader(table).graph(),
  );
  await today('GET /nodes, every partition (once)', async () => ({
    nodes: listedNodes(await new DynamoDBMeshViewReader(table).graph()),
  }));
  client.destroy();

  return [
    {
      title: `views at ${size.toLocaleString('en')} nodes on DynamoDB Local: paged and filtered beside today's whole-mesh reads`,
      columns: ['read', 'median ms', 'largest answer KiB', 'requests'],
      rows,
      notes: [
        'seeded (scale/fleet-seed.ts): every node one module and labels, sent; one in 100 a broker, one in 30 consuming one; one in 50 behind, one in 40 failed, one in 20 offline',
        `a filtered page is 100 nodes; the console's first render reads /summary, /nodes?limit=50 (${tableRows} rows), /pushes, /rollouts and /dead-letters, and no /graph past 200 nodes`,
      ],
    },
    {
      title: `mesh status at ${size.toLocaleString('en')} nodes, paged, against AWS's bounds (${gatewaySeconds} s a request, 6 MB an answer)`,
      columns: ['measure', 'value', 'bound', 'within'],
      rows: [
        [`pages of ${cliPageNodes}`, cli.pages, '', ''],
        [
          'slowest request ms',
          Math.round(cli.slowest),
          gatewaySeconds * 1000,
          cli.slowest < gatewaySeconds * 1000 ? 'yes' : 'NO',
        ],
        [
          'largest answer KiB',
          kib(cli.largest),
          kib(lambdaAnswerBytes),
          cli.largest < lambdaAnswerBytes ? 'yes' : 'NO',
        ],
        ['whole walk ms (requests only)', Math.round(cli.ms), '', ''],
        [
          `mesh status wall ms (the CLI, ${printed} nodes printed${exitedNote})`,
          Math.round(cliMs),
          '',
          printed === size ? 'all' : 'MISSING',
        ],
      ],
    },
  ];
}
