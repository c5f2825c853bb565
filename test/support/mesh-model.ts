import fc from 'fast-check';
import { expect } from 'vitest';
import { compose, isBehind } from '../../lib/core/mesh/declaration.ts';
import { MeshError } from '../../lib/core/mesh/errors.ts';
import type { NodeSnapshot } from '../../lib/core/mesh/model.ts';
import type { ModuleVersions, PushOutcome, PushRequest } from '../../lib/core/ports.ts';

/**
 * The mesh model, shared by the in-memory property test and its run on DynamoDB Local: random
 * sequences of operations that are valid by construction (modules with fixed kinds, consumers
 * of providers that exist, on other nodes more often than not), and after every push a
 * from-scratch comparison that ignores marks: compose every node, compare with what it was
 * last sent. Its `behind` must be exactly the push's `behind`.
 */
export type ModelWorld = {
  addNode(node: string): Promise<void>;
  assign(node: string, module: string, provides: string | null): Promise<void>;
  consume(consumer: NodeModule, provider: NodeModule): Promise<void>;
  readonly moduleVersions: ModuleVersions;
  push(request: PushRequest): Promise<PushOutcome>;
  readNode(node: string): Promise<NodeSnapshot | undefined>;
};

type NodeModule = { readonly node: string; readonly module: string };

const nodeCount = 5;
/** A module's kind is mesh-wide and fixed: providers always provide the same kind. */
const modules: ReadonlyArray<{ readonly name: string; readonly provides: string | null }> = [
  { name: 'db', provides: 'sql' },
  { name: 'mq', provides: 'amqp' },
  { name: 'web', provides: null },
  { name: 'worker', provides: null },
  { name: 'cron', provides: null },
];

const index = fc.nat({ max: 1000 });
export type Step = typeof operation extends fc.Arbitrary<infer T> ? T : never;
const operation = fc.oneof(
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('add' as const), node: index }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('assign' as const), node: index, module: index }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('consume' as const),
      consumer: index,
      provider: index,
      crossNode: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('upgrade' as const),
      module: index,
      version: fc.constantFrom('1', '2', '3'),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('push' as const),
      node: fc.option(index, { nil: undefined }),
      full: fc.boolean(),
      maxRounds: fc.integer({ min: 1, max: 3 }),
    }),
  },
);

/**
 * A sequence opens with a few nodes and assignments, so the operations after them have
 * something to relate and push; then anything, in any order, more nodes and assignments too.
 */
export const operations = fc
  .tuple(
    fc.array(fc.record({ kind: fc.constant('add' as const), node: index }), {
      minLength: 2,
      maxLength: nodeCount,
    }),
    fc.array(fc.record({ kind: fc.constant('assign' as const), node: index, module: index }), {
      minLength: 2,
      maxLength: 8,
    }),
    fc.array(operation, { minLength: 2, maxLength: 25 }),
  )
  .map(([adds, assigns, rest]): Step[] => [...adds, ...assigns, ...rest]);

/** What the runs covered, so a test can fail when its generators drift into the trivial. */
export type Coverage = {
  sequences: number;
  withCrossNodeConsume: number;
  pushes: number;
  /** Pushes that hit the round bound with some node still behind. */
  boundHits: number;
  /** Pushes that flushed a node they did not name or find marked when they began: a mint's provider. */
  mintFlushes: number;
};

export const emptyCoverage = (): Coverage => ({
  sequences: 0,
  withCrossNodeConsume: 0,
  pushes: 0,
  boundHits: 0,
  mintFlushes: 0,
});

/**
 * Runs one sequence, checking every push and every upgrade; adds what it covered. Node and
 * module names carry `prefix`, so sequences can share one store.
 */
export async function runSequence(
  world: ModelWorld,
  steps: readonly Step[],
  coverage: Coverage,
  prefix: string,
): Promise<void> {
  const nodes: string[] = [];
  const assigned: NodeModule[] = [];
  const pick = <T>(items: readonly T[], at: number) => items[at % items.length] as T;
  let crossNode = false;
  coverage.sequences += 1;
  for (const step of steps) {
    try {
      switch (step.kind) {
        case 'add': {
          const node = `${prefix}n${step.node % nodeCount}`;
          if (nodes.includes(node)) continue;
          await world.addNode(node);
          nodes.push(node);
          break;
        }
        case 'assign': {
          if (nodes.length === 0) continue;
          const node = pick(nodes, step.node);
          const module = pick(modules, step.module);
          const name = `${prefix}${module.name}`;
          if (assigned.some((a) => a.node === node && a.module === name)) continue;
          await world.assign(node, name, module.provides);
          assigned.push({ node, module: name });
          break;
        }
        case 'consume': {
          const providers = assigned.filter(
            (a) => modules.find((m) => `${prefix}${m.name}` === a.module)?.provides,
          );
          if (providers.length === 0) continue;
          const provider = pick(providers, step.provider);
          const consumers = assigned.filter(
            (a) =>
              !(a.node === provider.node && a.module === provider.module) &&
              (step.crossNode ? a.node !== provider.node : true),
          );
          if (consumers.length === 0) continue;
          const consumer = pick(consumers, step.consumer);
          await world.consume(consumer, provider);
          if (consumer.node !== provider.node) crossNode = true;
          break;
        }
        case 'upgrade': {
          const carried = [...new Set(assigned.map((a) => a.module))];
          if (carried.length === 0) continue;
          const module = pick(carried, step.module);
          const { carriers } = await world.moduleVersions.setModuleVersion(module, step.version);
          // Every carrier, however lately assigned, now carries the version.
          const expected = assigned.filter((a) => a.module === module).map((a) => a.node);
          expect([...carriers].sort()).toEqual([...expected].sort());
          for (const node of expected) {
            const assignment = (await world.readNode(node))?.assignments.find((a) => a.module === module);
            expect({ node, module, version: assignment?.version }).toEqual({
              node,
              module,
              version: step.version,
            });
          }
          break;
        }
        case 'push': {
          if (step.node !== undefined && nodes.length === 0) continue;
          const named = step.node === undefined ? undefined : pick(nodes, step.node);
          const request: PushRequest = named
            ? { node: named, maxRounds: step.maxRounds }
            : { behind: true, full: step.full, maxRounds: step.maxRounds };
          const before = await behindFromScratch(world, nodes);
          const outcome = await world.push(request);
          const after = await behindFromScratch(world, nodes);
          coverage.pushes += 1;
          if (outcome.behind.length > 0) coverage.boundHits += 1;
          if (outcome.flushed.some((f) => !before.includes(f.node))) coverage.mintFlushes += 1;
          expect({ request, behind: [...outcome.behind].sort() }).toEqual({ request, behind: after });
          break;
        }
      }
    } catch (error) {
      // Relations that exist already are refused as the model says; anything else is a defect.
      if (!(error instanceof MeshError)) throw error;
    }
  }
  if (crossNode) coverage.withCrossNodeConsume += 1;
}

/** The nodes whose declaration, composed now, differs from what they were last sent; marks ignored. */
export async function behindFromScratch(world: ModelWorld, nodes: readonly string[]): Promise<string[]> {
  const behind: string[] = [];
  for (const node of nodes) {
    const snapshot = await world.readNode(node);
    if (!snapshot) continue;
    const composed = compose(snapshot, { secret: () => 'scratch', now: () => 'scratch' });
    if (isBehind(snapshot, composed)) behind.push(node);
  }
  return behind.sort();
}

/** The coverage a run must reach, or its generators have drifted and it checks little. */
export function expectCoverage(coverage: Coverage): void {
  expect(coverage.withCrossNodeConsume / coverage.sequences).toBeGreaterThanOrEqual(1 / 3);
  expect(coverage.boundHits).toBeGreaterThan(0);
  expect(coverage.mintFlushes).toBeGreaterThan(0);
}
