import { randomBytes } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { type RunningLocalRuntime, startLocalRuntime } from '../lib/local/local-runtime.ts';
import { documentClient } from '../lib/server/adapters/dynamodb/requests.ts';
import { type OpenBrowser, openBrowser } from '../test/support/browser.ts';
import { fleetStateItems } from '../test/support/view-seeds.ts';
import { seed } from './push.bench.ts';
import { fleetItems, fleetName } from './scale/fleet-seed.ts';
import { summarySection } from './scale/summary.ts';
import { viewSection } from './scale/views.ts';
import { run as providerRun } from './scale-provider.bench.ts';
import { benchEnvironment } from './support/environment.ts';
import { type BenchTable, formatTable } from './support/table.ts';

/**
 * The mesh at fleet scale (issue 22): for each size, a mesh seeded straight into the store
 * (scale/fleet-seed.ts, and test/support/view-seeds.ts's behind, failed and offline nodes),
 * served by the local runtime, and each section measuring what it owns against it, new way beside
 * today's in the same run: the summary (scale/summary.ts), the views (scale/views.ts), then once
 * the provider with 10,000 consumers (scale-provider.bench.ts). A section is a function of the
 * seeded mesh that answers its tables; more go in `sections` (and `once`, for what is measured on
 * a mesh of its own).
 */
export type ScaleMesh = {
  readonly size: number;
  readonly runtime: RunningLocalRuntime;
  readonly browser: OpenBrowser;
  /** A node of the seeded mesh by its index (push.bench.ts's names). */
  readonly nodeName: (i: number) => string;
};
export type ScaleSection = (mesh: ScaleMesh) => Promise<BenchTable[]>;

// The summary first: it waits for the stream to count the seed, so the views read a quiet store.
const sections: readonly ScaleSection[] = [summarySection, viewSection];
// One provider with 10,000 consumers beside today's 300 (scale-provider.bench.ts).
const once: ReadonlyArray<() => Promise<BenchTable[]>> = [providerRun];

const sizes = (process.env.MESH_BENCH_SCALE_SIZES ?? '10000,50000').split(',').map(Number);

export async function run(): Promise<BenchTable[]> {
  const browser = await openBrowser({ width: 1600, height: 1000 });
  const tables: BenchTable[] = [];
  try {
    for (const size of sizes) {
      // Emulators of its own for each size: DynamoDB Local slows every write when another mesh
      // and its stream are in the same process (a 50,000-node seed after 10,000 took 25 items a
      // second against 2,300 alone).
      const environment = await benchEnvironment();
      const runtime = await startLocalRuntime({
        port: 0,
        given: environment.emulators.endpoints,
        resourcePrefix: `bench-scale-${size}-${randomBytes(3).toString('hex')}`,
        logLevel: 'ERROR',
        consoleRefreshSeconds: 3600,
      });
      try {
        const seeded = await seedFleet(runtime, size);
        const mesh: ScaleMesh = { size, runtime, browser, nodeName: fleetName };
        for (const section of sections) {
          const measured = await section(mesh);
          // Said as measured too, so a run cut short still shows the sizes it finished.
          for (const table of measured) process.stderr.write(`\n${formatTable(table)}`);
          tables.push(
            ...measured.map((table) => ({
              ...table,
              notes: [...(table.notes ?? []), `seeded ${size} nodes in ${seeded} s`],
            })),
          );
        }
      } finally {
        await runtime.stop();
        await environment.stop();
      }
    }
    for (const measure of once) tables.push(...(await measure()));
    return tables;
  } finally {
    await browser.close();
  }
}

/** Calls `say` at most once every `ms` milliseconds, and always for the last item. */
function progressEvery(ms: number, say: (written: number, of: number) => void) {
  let saidAt = performance.now();
  return (written: number, of: number) => {
    const now = performance.now();
    if (written < of && now - saidAt < ms) return;
    saidAt = now;
    say(written, of);
  };
}

/** Seeds the mesh in batches of 25 items, saying how far it is; answers the seconds it took. */
async function seedFleet(runtime: RunningLocalRuntime, size: number): Promise<number> {
  const started = performance.now();
  // Batch writes of large items are slow on a busy machine: no 3 s request timeout here.
  const client = new DynamoDBClient({
    region: runtime.config.region,
    endpoint: runtime.config.endpoints?.dynamodb,
    credentials: { accessKeyId: 'meshlocal', secretAccessKey: 'meshlocal' },
    maxAttempts: 10,
    requestHandler: { requestTimeout: 120_000 },
  });
  try {
    const names = Array.from({ length: size }, (_, i) => fleetName(i));
    await seed(
      documentClient(client),
      runtime.config.inventoryTable,
      [...fleetItems(size), ...fleetStateItems(names)],
      progressEvery(10_000, (written, of) =>
        process.stderr.write(
          `bench scale: seeded ${written.toLocaleString('en')} of ${of.toLocaleString('en')} items\n`,
        ),
      ),
    );
  } finally {
    client.destroy();
  }
  return Math.round((performance.now() - started) / 1000);
}
