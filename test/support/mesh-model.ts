import fc from 'fast-check';
import { expect } from 'vitest';
import { localActor } from '../../lib/server/core/audit/record.ts';
import {
  compose,
  isBehind,
  keyedProvidersOf,
  type MintDetails,
} from '../../lib/server/core/mesh/declaration.ts';
import { HasDependentsError, MeshError, ProvisionNotMintedError } from '../../lib/server/core/mesh/errors.ts';
import type { NodeSnapshot, SealingKey } from '../../lib/server/core/mesh/model.ts';
import type { ModuleVersions } from '../../lib/server/core/mesh/ports.ts';
import { MeshService } from '../../lib/server/core/mesh/service.ts';
import type { PushOutcome, PushRequest } from '../../lib/server/core/push/ports.ts';
import type { MemoryMeshStore } from './memory-mesh-store.ts';

/**
 * The mesh model, shared by the in-memory property test and its run on DynamoDB Local: random
 * sequences of operations that are valid by construction (modules with fixed kinds, consumers
 * of providers that exist, on other nodes more often than not), and after every push a
 * from-scratch comparison that ignores marks: compose every node, compare with what it was
 * last sent. Its `behind` must be exactly the push's `behind`. Removals, rotations and re-adds
 * of removed names are in the sequences too: the model knows which removals must be refused
 * (dependents without cascade) and what each one takes away.
 */
export type ModelWorld = {
  addNode(node: string): Promise<void>;
  assign(node: string, module: string, provides: string | null): Promise<void>;
  consume(consumer: NodeModule, provider: NodeModule): Promise<void>;
  unconsume(consumer: NodeModule, provider: NodeModule): Promise<unknown>;
  unassign(node: string, module: string, cascade: boolean): Promise<unknown>;
  removeNode(node: string, cascade: boolean): Promise<unknown>;
  rotate(consumer: NodeModule, provider: NodeModule): Promise<void>;
  readonly moduleVersions: ModuleVersions;
  push(request: PushRequest): Promise<PushOutcome>;
  readNode(node: string): Promise<NodeSnapshot | undefined>;
  readSealingKeys(nodes: readonly string[]): Promise<ReadonlyMap<string, SealingKey>>;
};

/**
 * The model's world over the in-memory store, the service's every change made as `local`; `push`
 * is how the test drives the push flow's steps over it.
 */
export function memoryModelWorld(
  store: MemoryMeshStore,
  push: (request: PushRequest) => Promise<PushOutcome>,
): ModelWorld {
  const service = new MeshService({ store, removals: store });
  return {
    addNode: (node) => service.addNode(node, {}, localActor()),
    assign: (node, module, provides) => service.assign(node, module, provides, localActor()),
    consume: (consumer, provider) => service.consume(consumer, provider, localActor()),
    unconsume: (consumer, provider) => service.unconsume(consumer, provider, localActor()),
    unassign: (node, module, cascade) => service.unassign(node, module, cascade, localActor()),
    removeNode: (node, cascade) => service.removeNode(node, cascade, localActor()),
    rotate: (consumer, provider) => service.rotate(consumer, provider, localActor()),
    moduleVersions: store,
    push,
    readNode: (node) => store.readNode(node),
    readSealingKeys: (nodes) => store.readSealingKeys(nodes),
  };
}

type NodeModule = { readonly node: string; readonly module: string };
type Consumption = { readonly consumer: NodeModule; readonly provider: NodeModule };
const same = (a: NodeModule, b: NodeModule) => a.node === b.node && a.module === b.module;

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
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('unconsume' as const), relation: index }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('unassign' as const), at: index, cascade: fc.boolean() }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('remove' as const), node: index, cascade: fc.boolean() }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('rotate' as const), relation: index }) },
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
  /** Removals that took something away, those that took dependents with them, and those refused for them. */
  removals: number;
  cascades: number;
  refusedForDependents: number;
  rotations: number;
  /** Nodes added again under a name that was removed. */
  readds: number;
};

export const emptyCoverage = (): Coverage => ({
  sequences: 0,
  withCrossNodeConsume: 0,
  pushes: 0,
  boundHits: 0,
  mintFlushes: 0,
  removals: 0,
  cascades: 0,
  refusedForDependents: 0,
  rotations: 0,
  readds: 0,
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
  const removed = new Set<string>();
  let assigned: NodeModule[] = [];
  let consumptions: Consumption[] = [];
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
          if (removed.delete(node)) {
            coverage.readds += 1;
            // A name added again is a new node: nothing of the removed one comes back.
            const snapshot = await world.readNode(node);
            expect({ node, ...pickHistory(snapshot) }).toEqual({ node, ...emptyHistory });
          }
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
          consumptions.push({ consumer, provider });
          if (consumer.node !== provider.node) crossNode = true;
          break;
        }
        case 'unconsume': {
          if (consumptions.length === 0) continue;
          const taken = pick(consumptions, step.relation);
          await world.unconsume(taken.consumer, taken.provider);
          consumptions = consumptions.filter((c) => c !== taken);
          coverage.removals += 1;
          break;
        }
        case 'unassign': {
          if (assigned.length === 0) continue;
          const module = pick(assigned, step.at);
          const dependents = consumptions.filter((c) => same(c.provider, module));
          const removal = world.unassign(module.node, module.module, step.cascade);
          if (dependents.length > 0 && !step.cascade) {
            await expect(removal).rejects.toBeInstanceOf(HasDependentsError);
            coverage.refusedForDependents += 1;
            continue;
          }
          await removal;
          assigned = assigned.filter((a) => !same(a, module));
          consumptions = consumptions.filter((c) => !same(c.consumer, module) && !same(c.provider, module));
          coverage.removals += 1;
          if (dependents.length > 0) coverage.cascades += 1;
          break;
        }
        case 'remove': {
          if (nodes.length === 0) continue;
          const node = pick(nodes, step.node);
          const elsewhere = consumptions.filter((c) => c.provider.node === node && c.consumer.node !== node);
          const removal = world.removeNode(node, step.cascade);
          if (elsewhere.length > 0 && !step.cascade) {
            await expect(removal).rejects.toBeInstanceOf(HasDependentsError);
            coverage.refusedForDependents += 1;
            continue;
          }
          await removal;
          nodes.splice(nodes.indexOf(node), 1);
          removed.add(node);
          assigned = assigned.filter((a) => a.node !== node);
          consumptions = consumptions.filter((c) => c.consumer.node !== node && c.provider.node !== node);
          expect({ node, snapshot: await world.readNode(node) }).toEqual({ node, snapshot: undefined });
          coverage.removals += 1;
          if (elsewhere.length > 0) coverage.cascades += 1;
          break;
        }
        case 'rotate': {
          if (consumptions.length === 0) continue;
          const rotated = pick(consumptions, step.relation);
          try {
            await world.rotate(rotated.consumer, rotated.provider);
            coverage.rotations += 1;
          } catch (error) {
            // a provision is minted by the push that first sends its consumer: until then there is nothing to rotate
            if (!(error instanceof ProvisionNotMintedError)) throw error;
          }
          break;
        }
        case 'upgrade': {
          const carried = [...new Set(assigned.map((a) => a.module))];
          if (carried.length === 0) continue;
          const module = pick(carried, step.module);
          const { carriers } = await world.moduleVersions.setModuleVersion(
            module,
            step.version,
            localActor(),
          );
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
      // Adding what exists already is refused, as the model says; anything else is a defect.
      if (!(error instanceof MeshError) || ['unconsume', 'unassign', 'remove'].includes(step.kind))
        throw error;
    }
  }
  if (crossNode) coverage.withCrossNodeConsume += 1;
}

const emptyHistory = {
  assignments: [],
  relations: [],
  dependents: [],
  provisions: [],
  grants: [],
  sent: undefined,
};
const pickHistory = (snapshot: NodeSnapshot | undefined) => ({
  assignments: snapshot?.assignments,
  relations: snapshot?.relations,
  dependents: snapshot?.dependents,
  provisions: snapshot?.provisions,
  grants: snapshot?.grants,
  sent: snapshot?.sent,
});

const scratchMint: MintDetails = {
  secret: () => 'scratch',
  now: () => 'scratch',
  generation: () => 'scratch',
  seal: async () => 'scratch',
};

/** The nodes whose declaration, composed now, differs from what they were last sent; marks ignored. */
export async function behindFromScratch(world: ModelWorld, nodes: readonly string[]): Promise<string[]> {
  const behind: string[] = [];
  for (const node of nodes) {
    const snapshot = await world.readNode(node);
    if (!snapshot) continue;
    const providers = keyedProvidersOf(snapshot);
    const keys = providers.length > 0 ? await world.readSealingKeys(providers) : new Map();
    const composed = await compose(snapshot, keys, scratchMint);
    if (isBehind(snapshot, composed)) behind.push(node);
  }
  return behind.sort();
}

/** The coverage a run must reach, or its generators have drifted and it checks little. */
export function expectCoverage(coverage: Coverage): void {
  expect(coverage.withCrossNodeConsume / coverage.sequences).toBeGreaterThanOrEqual(1 / 3);
  expect(coverage.boundHits).toBeGreaterThan(0);
  expect(coverage.mintFlushes).toBeGreaterThan(0);
  expect(coverage.removals).toBeGreaterThan(0);
  expect(coverage.cascades).toBeGreaterThan(0);
  expect(coverage.refusedForDependents).toBeGreaterThan(0);
  expect(coverage.rotations).toBeGreaterThan(0);
  expect(coverage.readds).toBeGreaterThan(0);
}
