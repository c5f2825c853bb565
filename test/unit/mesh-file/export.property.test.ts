import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  applyInMemory,
  exportMeshFile,
  type LiveMesh,
  liveKinds,
  type MeshNode,
  planApply,
  planMatches,
  readMeshFile,
} from '../../../lib/server/core/mesh-file/index.ts';
import { sliceLeft, slicesOf } from '../../../lib/server/core/mesh-file/plan-slices.ts';

/** Names YAML would read as something else if written bare: the export must quote them. */
const tricky = ['true', 'null', 'yes', 'no', 'on', 'y', 'nan', 'inf', 'e1', 'x0'];
const name = fc.oneof(fc.stringMatching(/^[a-z](?:[a-z0-9-]{0,6}[a-z0-9])?$/), fc.constantFrom(...tricky));
const labelValue = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,5}[A-Za-z0-9])?$/),
  fc.constantFrom(
    '1',
    '007',
    '1.5',
    '1e3',
    '0x10',
    'true',
    'False',
    'NULL',
    'Yes',
    'Y',
    'oFF',
    'NO',
    'inf',
    'nan',
    '0o7',
    '1_000',
    '12-01',
  ),
);
const labelKey = fc.stringMatching(/^[a-z][a-z0-9_-]{0,6}$/);

/** A mesh the store could hold: kinds mesh-wide, relations to providers that exist, none to itself. */
const liveMesh: fc.Arbitrary<LiveMesh> = fc
  .record({
    nodes: fc.uniqueArray(name, { minLength: 0, maxLength: 7 }),
    modules: fc.uniqueArray(
      fc.record({
        module: name,
        kind: fc.option(fc.constantFrom('amqp', 'pg', 'true', 'null'), { nil: null }),
      }),
      {
        selector: (m) => m.module,
        maxLength: 5,
      },
    ),
    seed: fc.array(fc.nat(), { minLength: 64, maxLength: 64 }),
    labels: fc.array(fc.dictionary(labelKey, labelValue, { maxKeys: 3 }), { minLength: 7, maxLength: 7 }),
  })
  .map(({ nodes, modules, seed, labels }) => {
    let i = 0;
    const pick = () => (seed[i++ % seed.length] ?? 0) + i;
    const assigned = nodes.map((node) => ({
      node,
      modules: modules.filter(() => pick() % 2 === 0),
    }));
    const providers = assigned.flatMap(({ node, modules: own }) =>
      own.filter((m) => m.kind !== null).map((m) => ({ node, module: m.module, kind: m.kind as string })),
    );
    const meshNodes: MeshNode[] = assigned.map(({ node, modules: own }, n) => ({
      node,
      labels: labels[n] ?? {},
      assignments: own.map((m) => ({ module: m.module, provides: m.kind })),
      relations: own.flatMap((m) =>
        providers
          .filter((p) => !(p.node === node && p.module === m.module) && pick() % 3 === 0)
          .map((p) => ({
            consumerModule: m.module,
            providerNode: p.node,
            providerModule: p.module,
            kind: p.kind,
          })),
      ),
    }));
    return { revision: 'r', nodes: meshNodes };
  });

const empty: LiveMesh = { revision: '0', nodes: [] };

describe('export', () => {
  it.each(['yaml', 'json'] as const)(
    'export → read → plan on an empty mesh → apply → export gives the same bytes (%s)',
    (format) => {
      const seen = { relations: 0, labels: 0, tricky: 0 };
      fc.assert(
        fc.property(liveMesh, (live) => {
          for (const node of live.nodes) {
            seen.relations += node.relations.length;
            seen.labels += Object.keys(node.labels).length;
            seen.tricky += tricky.includes(node.node) ? 1 : 0;
          }
          const text = exportMeshFile(live, format);
          const { mesh } = readMeshFile(text);
          const rebuilt = applyInMemory(empty, planApply(mesh, empty), '1');
          expect(exportMeshFile(rebuilt, format)).toBe(text);
          // And the file read against the mesh it came from asks for nothing.
          expect(planMatches(planApply(mesh, live))).toBe(true);
        }),
        { numRuns: 200 },
      );
      // The meshes were not all empty: relations, labels and names YAML would misread were tried.
      expect(Math.min(seen.relations, seen.labels, seen.tricky)).toBeGreaterThan(20);
    },
  );

  it('an apply with prune makes any mesh the file’s; one without leaves only drift', () => {
    let applied = 0;
    fc.assert(
      fc.property(liveMesh, liveMesh, (before, wanted) => {
        const kinds = liveKinds(before);
        // A module's kind is fixed mesh-wide: a file giving another is refused, not planned.
        fc.pre(
          wanted.nodes.every((n) =>
            n.assignments.every((a) => !kinds.has(a.module) || kinds.get(a.module) === a.provides),
          ),
        );
        const text = exportMeshFile(wanted);
        const { mesh } = readMeshFile(text, { kinds });
        const pruned = planApply(mesh, before, { prune: true, allowMassRemoval: true });
        expect(pruned.problems).toEqual([]);
        expect(exportMeshFile(applyInMemory(before, pruned, '2'))).toBe(text);
        const kept = applyInMemory(before, planApply(mesh, before), '2');
        const again = planApply(mesh, kept);
        expect([again.add.nodes, again.add.modules, again.add.relations, again.labels]).toEqual([
          [],
          [],
          [],
          [],
        ]);
        applied += 1;
      }),
      { numRuns: 200 },
    );
    expect(applied).toBeGreaterThan(100);
  });

  it('a plan carried out slice by slice, each slice taken twice, makes the mesh the whole plan makes', () => {
    let sliced = 0;
    fc.assert(
      fc.property(liveMesh, liveMesh, fc.integer({ min: 1, max: 3 }), (before, wanted, nodesPerSlice) => {
        const kinds = liveKinds(before);
        fc.pre(
          wanted.nodes.every((n) =>
            n.assignments.every((a) => !kinds.has(a.module) || kinds.get(a.module) === a.provides),
          ),
        );
        const { mesh } = readMeshFile(exportMeshFile(wanted), { kinds });
        const plan = planApply(mesh, before, { prune: true, allowMassRemoval: true });
        let live = before;
        for (const slice of slicesOf(plan, nodesPerSlice)) {
          // every relation a slice adds has its provider's assignment written before the slice
          const assigned = new Set(
            live.nodes.flatMap((n) => n.assignments.map((a) => `${n.node}/${a.module}`)),
          );
          for (const module of slice.add.modules) assigned.add(`${module.node}/${module.module}`);
          for (const r of slice.add.relations)
            expect(assigned).toContain(`${r.providerNode}/${r.providerModule}`);
          live = applyInMemory(live, sliceLeft(slice, live.nodes), '3');
          const again = sliceLeft(slice, live.nodes);
          expect([again.add, again.remove, again.labels]).toEqual([
            { nodes: [], modules: [], relations: [] },
            { relations: [], modules: [], nodes: [] },
            [],
          ]);
          sliced += 1;
        }
        expect(exportMeshFile(live)).toBe(exportMeshFile(applyInMemory(before, plan, '3')));
      }),
      { numRuns: 150 },
    );
    expect(sliced).toBeGreaterThan(150);
  });

  it('writes nodes, modules, consumes and labels in order, and quotes what YAML would misread', () => {
    const live: LiveMesh = {
      revision: '9',
      nodes: [
        {
          node: 'web-1',
          labels: { zone: '01', role: 'web' },
          assignments: [{ module: 'nginx', provides: null }],
          relations: [
            { consumerModule: 'nginx', providerNode: 'true', providerModule: 'rabbit', kind: 'amqp' },
            { consumerModule: 'nginx', providerNode: 'broker-1', providerModule: 'rabbit', kind: 'amqp' },
          ],
        },
        { node: 'true', labels: {}, assignments: [{ module: 'rabbit', provides: 'amqp' }], relations: [] },
        {
          node: 'broker-1',
          labels: {},
          assignments: [{ module: 'rabbit', provides: 'amqp' }],
          relations: [],
        },
        { node: 'idle', labels: {}, assignments: [], relations: [] },
      ],
    };
    expect(exportMeshFile(live)).toBe(`version: 1
nodes:
  broker-1:
    modules:
      rabbit:
        provides: amqp
  idle: {}
  "true":
    modules:
      rabbit:
        provides: amqp
  web-1:
    labels:
      role: web
      zone: "01"
    modules:
      nginx:
        consumes:
          - broker-1/rabbit
          - true/rabbit
`);
    expect(JSON.parse(exportMeshFile(live, 'json')).nodes.idle).toEqual({});
  });
});
