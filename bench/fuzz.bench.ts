import { describeClass, failureClasses } from '../test/support/fuzz/fuzz-report.ts';
import { type FuzzFigures, fuzzRoutes, noFigures, type RouteFigures } from '../test/support/fuzz/fuzz-run.ts';
import { benchEnvironment } from './support/environment.ts';
import type { BenchTable } from './support/table.ts';

const cases = Number(process.env.MESH_FUZZ_CASES ?? 10_000);
const seed = Number(process.env.MESH_FUZZ_SEED ?? 15);
/** MESH_FUZZ_STRANGERS=1: the stranger cases only (test/support/fuzz/stranger-cases.ts). */
const strangers = process.env.MESH_FUZZ_STRANGERS === '1';

/**
 * The route fuzz (test/support/fuzz) at length: `cases` requests against the local runtime's
 * HTTP API on DynamoDB Local, both tables read after every one. MESH_FUZZ_CASES and
 * MESH_FUZZ_SEED change the count and the seed; the integration test runs a few hundred.
 */
export async function run(): Promise<BenchTable[]> {
  const environment = await benchEnvironment();
  try {
    const config = await environment.provision('bench-fuzz');
    const figures = await fuzzRoutes({
      config,
      cases,
      seed,
      strangers,
      onProgress: (done) => {
        if (done % 1000 === 0 || done === cases) process.stdout.write(`fuzz: ${done} of ${cases} cases\n`);
      },
    });
    for (const failureClass of failureClasses(figures.failures))
      process.stdout.write(`${describeClass(failureClass)}\n`);
    return [routeTable(figures), kindTable(figures)];
  } finally {
    await environment.stop();
  }
}

const columns = ['cases', '2xx/3xx', '4xx', '5xx or none', 'writes by 4xx', 'proof ids kept by 4xx'];
const cells = (row: RouteFigures) => [
  row.cases,
  row.ok,
  row.refused,
  row.failed,
  row.writesByRefused,
  row.proofItemsByRefused,
];

function total(rows: Iterable<RouteFigures>): RouteFigures {
  const sum = noFigures();
  for (const row of rows)
    for (const key of Object.keys(sum) as Array<keyof RouteFigures>) sum[key] += row[key];
  return sum;
}

function routeTable(figures: FuzzFigures): BenchTable {
  const rows = [...figures.byRoute].sort(([a], [b]) => a.localeCompare(b));
  const failures = new Map<string, number>();
  for (const failure of figures.failures) failures.set(failure.rule, (failures.get(failure.rule) ?? 0) + 1);
  return {
    title: `route fuzz: ${total(figures.byRoute.values()).cases} cases in ${figures.seconds.toFixed(0)} s, seed ${figures.seed}`,
    columns: ['route', ...columns],
    rows: [
      ...rows.map(([route, row]) => [route, ...cells(row)]),
      ['all routes', ...cells(total(figures.byRoute.values()))],
    ],
    notes: [
      'goal: 0 answered 5xx or not at all, 0 writes by a request answered 4xx',
      'the one write a 4xx may leave: the replay-guard item of a host request whose proof verified (its proof id, spent)',
      failures.size === 0
        ? 'no rule broken'
        : `rules broken: ${[...failures].map(([rule, count]) => `${rule} × ${count}`).join(', ')} (each printed above with a curl line)`,
    ],
  };
}

function kindTable(figures: FuzzFigures): BenchTable {
  const rows = [...figures.byKind].sort(([, a], [, b]) => b.cases - a.cases);
  return {
    title: 'route fuzz by kind of case',
    columns: ['kind', ...columns],
    rows: rows.map(([kind, row]) => [kind, ...cells(row)]),
  };
}
