import { expect, it } from 'vitest';
import { routes } from '../../lib/server/functions/table.ts';
import { describeClass, failureClasses } from '../support/fuzz/fuzz-report.ts';
import { fuzzRoutes } from '../support/fuzz/fuzz-run.ts';
import { routesWithoutRequests } from '../support/fuzz/route-requests.ts';
import { strangerKinds } from '../support/fuzz/stranger-cases.ts';
import { provisionTestResources } from '../support/resources.ts';

/** A few hundred here; `npm run bench -- fuzz` runs 10,000 with the same generator. */
const cases = 600;
const seed = Number(process.env.MESH_FUZZ_SEED ?? 15);

it('every route of lib/server/functions/table.ts has its schemas in the fuzz', () => {
  expect(routesWithoutRequests()).toEqual([]);
});

it(`${cases} fuzzed requests over every route: none answered 5xx, none refused that wrote, no forged proof passed`, async () => {
  const config = await provisionTestResources('fuzz');

  const figures = await fuzzRoutes({ config, cases, seed });

  const broken = failureClasses(figures.failures);
  expect(broken.map(describeClass), `seed ${seed}`).toEqual([]);
  const reached = routes.filter((route) => (figures.byRoute.get(route.handler)?.cases ?? 0) > 0);
  expect(reached.map((route) => route.handler)).toEqual(routes.map((route) => route.handler));
  expect(figures.byKind.get('forged proof')?.refused).toBeGreaterThan(0);
  expect(figures.byKind.get('replay')?.refused).toBeGreaterThan(0);
  expect(figures.byKind.get('valid')?.ok).toBeGreaterThan(cases / 10);
}, 120_000);

/** Stranger cases (test/support/fuzz/stranger-cases.ts): `npm run bench -- fuzz` with MESH_FUZZ_STRANGERS=1 runs more. */
const strangers = 250;

it(`${strangers} requests as a stranger sends them (Origin, Host, Content-Type, unframed bodies, path tricks): each refused with its own 4xx, none wrote`, async () => {
  const config = await provisionTestResources('strangers');

  const figures = await fuzzRoutes({ config, cases: strangers, seed, strangers: true });

  const broken = failureClasses(figures.failures);
  expect(broken.map(describeClass), `seed ${seed}`).toEqual([]);
  const byKind = Object.fromEntries(
    strangerKinds.map((kind) => {
      const row = figures.byKind.get(kind);
      return [
        kind,
        { cases: row?.cases ?? 0, refused: row?.refused ?? 0, writesByRefused: row?.writesByRefused ?? 0 },
      ];
    }),
  );
  // every case refused, none writing, and every kind reached well
  for (const [kind, row] of Object.entries(byKind)) {
    expect({ kind, ...row, cases: row.cases >= strangers / 10 }).toEqual({
      kind,
      cases: true,
      refused: row.cases,
      writesByRefused: 0,
    });
  }
  process.stdout.write(`stranger fuzz, seed ${seed}: ${JSON.stringify(byKind)}\n`);
}, 180_000);
