import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { heldOf, rolloutHolder } from '../../lib/server/core/hold/held-back.ts';
import { Freezes } from '../../lib/server/core/hold/service.ts';
import type { Declaration } from '../../lib/server/core/mesh/declaration.ts';
import { MeshError } from '../../lib/server/core/mesh/errors.ts';
import { MeshService } from '../../lib/server/core/mesh/service.ts';
import type { PushOutcome, PushRequest } from '../../lib/server/core/push/ports.ts';
import { Pusher } from '../../lib/server/core/push/pusher.ts';
import { pushTaskFunctions } from '../../lib/server/core/push/steps.ts';
import type { Facts } from '../../lib/server/core/rollout/advance.ts';
import { isDriven } from '../../lib/server/core/rollout/claims.ts';
import { RolloutError } from '../../lib/server/core/rollout/errors.ts';
import type { RolloutFacts } from '../../lib/server/core/rollout/ports.ts';
import { Rollouts } from '../../lib/server/core/rollout/service.ts';
import { rolloutOptions } from '../../lib/server/core/rollout/waves.ts';
import { runPushDefinition } from '../../lib/server/flows/push-definition.ts';
import { MemoryFreezeStore, MemoryHoldReader } from '../support/memory-holds.ts';
import { MemoryMeshStore, splitRelations, testSealing } from '../support/memory-mesh-store.ts';
import { MemoryRolloutStore } from '../support/memory-rollout-store.ts';
import { unsealedMint } from '../support/sealing.ts';

/**
 * Held back means held back (docs/decisions/held-back.md), as a model: a small mesh of brokers
 * (`mq` on two `role=db` nodes) and workers consuming them, some nodes never enrolled, driven
 * by any interleaving of pushes (named, --behind), enrolments, hosts applying (a worker at
 * version `bad` fails), mesh changes, upgrades with and without waves, rollout steps, resumes,
 * aborts and undos, freezes and unfreezes. After every operation:
 * - no node held back before it (by a freeze in force, or by a rollout that had not released
 *   it) was sent anything, except by its own rollout's wave (or the undo taking it back), never
 *   while frozen;
 * - no consumer holds a provision whose grant its provider was not sent, that it did not before;
 * - an aborted upgrade's version never reaches a node its rollout did not send.
 */
const nodes = ['db0', 'db1', 'w0', 'w1', 'w2', 'w3'];
const workers = nodes.filter((node) => node.startsWith('w'));
const brokers = nodes.filter((node) => node.startsWith('db'));
const labelsOf = (node: string) => ({ role: node.startsWith('db') ? 'db' : 'app' });

const pick = <T>(items: readonly T[], at: number) => items[at % items.length] as T;
const index = fc.nat({ max: 1000 });

const operation = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('push' as const), node: index }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('push-behind' as const) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('enrol' as const), node: index }) },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('apply' as const) }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('consume' as const), worker: index, broker: index }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('unconsume' as const), worker: index, broker: index }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('upgrade' as const), version: fc.constantFrom('2', 'bad') }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('upgrade-waves' as const),
      version: fc.constantFrom('2', '3', 'bad'),
      waves: fc.constantFrom('1,100%', '1,2,100%', '2,100%'),
      maxFailures: fc.constantFrom('0', '1'),
      autoUndo: fc.boolean(),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('push-waves' as const),
      waves: fc.constantFrom('1,100%', '2,100%'),
    }),
  },
  { weight: 20, arbitrary: fc.record({ kind: fc.constant('step' as const), at: index }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('resume' as const), at: index }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('abort' as const), at: index }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('undo' as const), at: index }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('freeze' as const),
      on: fc.constantFrom('role=db', 'role=app', 'all'),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('unfreeze' as const),
      on: fc.constantFrom('role=db', 'role=app', 'all'),
    }),
  },
);
type Step = typeof operation extends fc.Arbitrary<infer T> ? T : never;

type Coverage = Record<
  | 'heldSkipped'
  | 'waits'
  | 'waveSends'
  | 'halts'
  | 'undone'
  | 'abortsRefused'
  | 'aborted'
  | 'frozenSkipped'
  | 'skippedUnenrolled',
  number
>;

function model(enrolled: readonly boolean[]) {
  let clock = Date.parse('2026-12-05T00:00:00Z');
  const now = () => new Date(clock);
  const store = new MemoryMeshStore({ enrolEveryNode: false });
  const rolloutStore = new MemoryRolloutStore();
  const freezeStore = new MemoryFreezeStore();
  const holds = new MemoryHoldReader(rolloutStore, freezeStore, now);
  const lastSent = {
    readDelivery: async (node: string) => {
      const canonical = store.deliveries.get(node);
      return canonical === undefined
        ? undefined
        : { node, revision: 0, digest: '', etag: '', sentAt: '', declaration: JSON.parse(canonical) };
    },
  };
  const pusher = new Pusher({ store, lastSent, holds, mint: unsealedMint });
  const tasks = pushTaskFunctions(pusher);
  const push = (request: PushRequest): Promise<PushOutcome> => runPushDefinition(tasks, request);
  const mesh = new MeshService({ store, removals: store });
  const freezes = new Freezes({ store: freezeStore, now });
  const reports = new Map<string, { revision: number; state: 'applied' | 'failed'; step?: string }>();
  const facts: RolloutFacts = {
    of: async (asked) => {
      const known: Facts = new Map(
        asked.map((node) => {
          const report = reports.get(node);
          const enrolledNow = store.nodes.get(node)?.sealingKey !== undefined;
          return [node, { ...(report ? { report } : {}), ...(enrolledNow ? {} : { enrolled: false }) }];
        }),
      );
      return known;
    },
    revisions: async (asked) =>
      new Map(
        asked.flatMap((node) => {
          const revision = store.nodes.get(node)?.sent?.revision;
          return revision === undefined ? [] : [[node, revision] as const];
        }),
      ),
  };
  const rollouts: Rollouts = new Rollouts({
    store: rolloutStore,
    facts,
    wave: (wave, rollout) => push({ nodes: wave, rollout }),
    moveCarriers: (module, version, asked) => store.moveCarriers(module, version, asked),
    behind: async () => pusher.behindOf(await pusher.candidates(false)),
    exists: async (node) => store.nodes.has(node),
    marked: (asked) => pusher.markedOf(asked),
    // the control queue, taken at once: the version set back, then the undo started
    requestUndo: async (undo) => {
      await store.setModuleVersion(undo.module, undo.version, localActor(), { carriers: false });
      await rollouts.startUndo({
        id: undo.rollout,
        undoes: undo.undoes,
        module: undo.module,
        version: undo.version,
        options: undo.options,
        by: localActor(),
      });
    },
    now,
    claimStep: { nodes: 2, ms: 60_000 },
  });
  for (const node of nodes) holds.labels.set(node, labelsOf(node));
  return {
    store,
    rolloutStore,
    freezes,
    pusher,
    push,
    mesh,
    rollouts,
    reports,
    holds,
    enrolled,
    tick: (ms: number) => (clock += ms),
    now,
  };
}

type Model = ReturnType<typeof model>;

const declarationOf = (m: Model, node: string) => {
  const canonical = m.store.deliveries.get(node);
  return canonical === undefined ? undefined : (JSON.parse(canonical) as Declaration);
};

const sentRevisions = (m: Model) =>
  new Map(nodes.map((node) => [node, m.store.nodes.get(node)?.sent?.revision ?? 0]));

async function heldNow(m: Model) {
  const view = await m.holds.view(nodes);
  return new Map(heldOf(nodes, view).map((held) => [held.node, held.by]));
}

const workerVersion = (m: Model, node: string) =>
  declarationOf(m, node)?.modules.find((module) => module.name === 'worker')?.version ?? null;

async function enrol(m: Model, node: string) {
  if (m.store.nodes.get(node)?.sealingKey) return;
  m.store.setSealingKey(node, testSealing.key);
  // what the enrolment's follow-up marks: the node and every node related to it, then one push of it
  for (const other of nodes) m.store.markNode(other);
  await m.push({ node });
}

/** Hosts apply what they were sent: a worker at version `bad` fails its hook. */
function hostsApply(m: Model) {
  for (const node of nodes) {
    const state = m.store.nodes.get(node);
    if (!state?.sealingKey || !state.sent) continue;
    const bad = workerVersion(m, node) === 'bad';
    m.reports.set(node, {
      revision: state.sent.revision,
      state: bad ? 'failed' : 'applied',
      ...(bad ? { step: 'hook exited 3' } : {}),
    });
  }
}

async function run(
  m: Model,
  step: Step,
  coverage: Coverage,
  aborted: Array<{ version: string; unsent: Set<string> }>,
) {
  const actor = localActor();
  const ids = [...m.rolloutStore.headers.keys()].sort();
  const rolloutAt = (at: number) => (ids.length > 0 ? pick(ids, at) : undefined);
  switch (step.kind) {
    case 'push': {
      const outcome = await m.push({ node: pick(nodes, step.node) });
      coverage.waits += (outcome.heldBack ?? []).filter((h) => h.waitsFor).length;
      return;
    }
    case 'push-behind':
      await m.push({ behind: true });
      return;
    case 'enrol':
      await enrol(m, pick(nodes, step.node));
      return;
    case 'apply':
      hostsApply(m);
      return;
    case 'consume':
      await m.mesh
        .consume(
          { node: pick(workers, step.worker), module: 'worker' },
          { node: pick(brokers, step.broker), module: 'mq' },
          actor,
        )
        .catch(ignoreRefusals);
      return;
    case 'unconsume':
      await m.mesh
        .unconsume(
          { node: pick(workers, step.worker), module: 'worker' },
          { node: pick(brokers, step.broker), module: 'mq' },
          actor,
        )
        .catch(ignoreRefusals);
      return;
    case 'upgrade': {
      // an upgrade without waves: the version set, then push --behind (lib/server/core/control/settle.ts)
      await m.store.setModuleVersion('worker', step.version);
      await m.push({ behind: true });
      return;
    }
    case 'upgrade-waves': {
      const { previous } = await m.store.setModuleVersion('worker', step.version, actor, { carriers: false });
      await m.rollouts
        .start({
          origin: { kind: 'upgrade', module: 'worker', version: step.version, from: previous },
          nodes: workers,
          options: rolloutOptions({
            waves: step.waves,
            maxFailures: step.maxFailures,
            waveTimeout: '60s',
            autoUndo: step.autoUndo,
          }),
          by: actor,
        })
        .catch(ignoreRefusals);
      return;
    }
    case 'push-waves': {
      await m.rollouts
        .start({
          origin: { kind: 'behind' },
          options: rolloutOptions({ waves: step.waves, maxFailures: '0', waveTimeout: '60s' }),
          by: actor,
        })
        .catch(ignoreRefusals);
      return;
    }
    case 'step': {
      const driven = ids.filter((id) => {
        const record = m.rolloutStore.headers.get(id);
        return record !== undefined && isDriven(record);
      });
      if (driven.length === 0) return;
      const id = pick(driven, step.at);
      m.tick(30_000);
      const { decision } = await m.rollouts.step(id).catch((error) => {
        if (error instanceof RolloutError) return { decision: { kind: 'idle' } as const };
        throw error;
      });
      if (decision.kind === 'send') coverage.waveSends += 1;
      if (decision.kind === 'halted') coverage.halts += 1;
      const record = m.rolloutStore.headers.get(id);
      if (record?.state === 'undone') coverage.undone += 1;
      for (const wave of m.rolloutStore.nodes.values())
        for (const n of wave) {
          if (n.state === 'held') coverage.heldSkipped += 1;
          if (n.state === 'held' && n.step?.includes('freeze')) coverage.frozenSkipped += 1;
          if (n.state === 'skipped') coverage.skippedUnenrolled += 1;
        }
      return;
    }
    case 'resume': {
      const id = rolloutAt(step.at);
      if (id) await m.rollouts.resume(id, actor).catch(ignoreRefusals);
      return;
    }
    case 'abort': {
      const id = rolloutAt(step.at);
      if (!id) return;
      const before = m.rolloutStore.headers.get(id);
      try {
        await m.rollouts.abort(id, actor);
        coverage.aborted += 1;
        if (before && before.origin.kind !== 'upgrade' && before.origin.kind !== 'undo') {
          // a push in waves never lets its change out: what it never sent is not behind when it lets go
          const whole = await m.rolloutStore.withNodes(
            before,
            before.waves.map((_, i) => i),
          );
          const unsent = whole.waves
            .slice(before.current + 1)
            .flatMap((w) => (w.nodes ?? []).filter((n) => !n.paired).map((n) => n.node));
          expect({ aborted: id, behind: await m.pusher.behindOf(unsent) }).toEqual({
            aborted: id,
            behind: [],
          });
        }
        if (before?.origin.kind === 'upgrade') {
          const whole = await m.rolloutStore.withNodes(
            before,
            before.waves.map((_, i) => i),
          );
          // the nodes it never sent whose version the mesh does not declare: a push must never give it to them
          const { version } = before.origin;
          const unsent = whole.waves
            .slice(before.current + 1)
            .flatMap((w) => (w.nodes ?? []).map((n) => n.node))
            // not declared at its version by anything else (an upgrade without waves sets every carrier)
            .filter((node) => m.store.nodes.get(node)?.assignments.get('worker')?.version !== version);
          aborted.push({ version, unsent: new Set(unsent) });
        }
      } catch (error) {
        if (error instanceof RolloutError && error.name === 'RolloutWouldReleaseError')
          coverage.abortsRefused += 1;
        else ignoreRefusals(error);
      }
      return;
    }
    case 'undo': {
      const id = rolloutAt(step.at);
      if (id) await m.rollouts.undo(id, actor).catch(ignoreRefusals);
      return;
    }
    case 'freeze':
      await m.freezes.freeze(
        step.on === 'all' ? { all: true } : { selector: step.on },
        { reason: 'model' },
        actor,
      );
      return;
    case 'unfreeze':
      await m.freezes
        .unfreeze(step.on === 'all' ? { all: true } : { selector: step.on }, actor)
        .catch(ignoreRefusals);
      return;
  }
}

function ignoreRefusals(error: unknown): void {
  if (
    error instanceof RolloutError ||
    error instanceof MeshError ||
    (error as Error)?.name?.startsWith('Freeze')
  )
    return;
  throw error;
}

/** Which rollout a step op moves, and the rollout it takes back if it is an undo. */
function movers(m: Model, step: Step, ids: readonly string[]): Set<string> {
  if (step.kind !== 'step') return new Set();
  const driven = ids.filter((id) => {
    const record = m.rolloutStore.headers.get(id);
    return record !== undefined && isDriven(record);
  });
  if (driven.length === 0) return new Set();
  const id = pick(driven, step.at);
  const origin = m.rolloutStore.headers.get(id)?.origin;
  return new Set([rolloutHolder(id), ...(origin?.kind === 'undo' ? [rolloutHolder(origin.rollout)] : [])]);
}

describe('held back means held back (model)', () => {
  it('no held-back node is sent what its rollout or freeze has not released, and no relation is split', async () => {
    const coverage: Coverage = {
      heldSkipped: 0,
      waits: 0,
      waveSends: 0,
      halts: 0,
      undone: 0,
      abortsRefused: 0,
      aborted: 0,
      frozenSkipped: 0,
      skippedUnenrolled: 0,
    };
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom(true, true, false), { minLength: nodes.length, maxLength: nodes.length }),
        fc.array(fc.tuple(index, index), { minLength: 1, maxLength: 5 }),
        fc.array(operation, { minLength: 10, maxLength: 60 }),
        async (enrolled, relations, steps) => {
          const m = model(enrolled);
          const actor = localActor();
          for (const [at, node] of nodes.entries()) {
            await m.mesh.addNode(node, labelsOf(node), actor);
            if (enrolled[at] || node === 'db0') m.store.setSealingKey(node, testSealing.key);
          }
          for (const broker of brokers) await m.mesh.assign(broker, 'mq', 'amqp', actor);
          for (const worker of workers) await m.mesh.assign(worker, 'worker', null, actor);
          await m.store.setModuleVersion('worker', '1');
          for (const [w, b] of relations)
            await m.mesh
              .consume(
                { node: pick(workers, w), module: 'worker' },
                { node: pick(brokers, b), module: 'mq' },
                actor,
              )
              .catch(ignoreRefusals);
          await m.push({ behind: true, full: true, maxRounds: 50 });
          const aborted: Array<{ version: string; unsent: Set<string> }> = [];
          for (const step of steps) {
            const ids = [...m.rolloutStore.headers.keys()].sort();
            const moving = movers(m, step, ids);
            const held = await heldNow(m);
            const sentBefore = sentRevisions(m);
            const splitBefore = new Set(splitRelations(m.store));
            await run(m, step, coverage, aborted);
            const heldAfter = await heldNow(m);
            const sentAfter = sentRevisions(m);
            for (const [node, by] of held) {
              if (sentAfter.get(node) === sentBefore.get(node)) continue;
              const frozen = by.startsWith('freeze:') && heldAfter.get(node) === by;
              const allowed = !frozen && moving.has(by);
              expect({ step, node, heldBy: by, sent: allowed }).toEqual({
                step,
                node,
                heldBy: by,
                sent: true,
              });
            }
            const split = splitRelations(m.store).filter((relation) => !splitBefore.has(relation));
            expect({ step, split }).toEqual({ step, split: [] });
            // a push, a flush or an enrolment's flush; a later rollout of the module is another act
            for (const { version, unsent } of aborted)
              for (const node of unsent)
                if (
                  sentAfter.get(node) !== sentBefore.get(node) &&
                  (step.kind === 'push' || step.kind === 'push-behind' || step.kind === 'enrol')
                )
                  expect({ step, node, aborted: version, sent: workerVersion(m, node) === version }).toEqual({
                    step,
                    node,
                    aborted: version,
                    sent: false,
                  });
            // a new upgrade of the module sets it anew: what an abort withdrew is its to send
            if (step.kind === 'upgrade' || step.kind === 'upgrade-waves') aborted.length = 0;
          }
        },
      ),
      { numRuns: 500 },
    );
    // the runs reached the cases that matter
    expect(coverage.waveSends).toBeGreaterThan(100);
    expect(coverage.halts).toBeGreaterThan(5);
    expect(coverage.heldSkipped).toBeGreaterThan(5);
    expect(coverage.frozenSkipped).toBeGreaterThan(0);
    expect(coverage.skippedUnenrolled).toBeGreaterThan(0);
    expect(coverage.undone).toBeGreaterThan(0);
    expect(coverage.abortsRefused).toBeGreaterThan(2);
    expect(coverage.aborted).toBeGreaterThan(5);
    expect(coverage.waits).toBeGreaterThan(0);
  }, 120_000);
});
