import { DeleteCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { DynamoDBAuditTrail } from '../../lib/server/adapters/audit/audit-trail.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import { documentClient, getItems } from '../../lib/server/adapters/dynamodb/requests.ts';
import { nodesPartition } from '../../lib/server/adapters/rollout/rollout-chunks.ts';
import { claimPartition } from '../../lib/server/adapters/rollout/rollout-claims.ts';
import { startingPartition } from '../../lib/server/adapters/rollout/rollout-starts.ts';
import { DynamoDBRolloutStore, rolloutsPartition } from '../../lib/server/adapters/rollout/rollout-store.ts';
import { jsonBytes, pageBytes } from '../../lib/server/core/answer-pages.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import type { PushOutcome } from '../../lib/server/core/push/ports.ts';
import type { NodeFacts } from '../../lib/server/core/rollout/advance.ts';
import { isReleasing } from '../../lib/server/core/rollout/claims.ts';
import { RolloutRaceError } from '../../lib/server/core/rollout/errors.ts';
import type { RolloutFacts, StepBudget } from '../../lib/server/core/rollout/ports.ts';
import type { RolloutOrigin, RolloutRecord } from '../../lib/server/core/rollout/record.ts';
import { Rollouts } from '../../lib/server/core/rollout/service.ts';
import { rolloutOptions } from '../../lib/server/core/rollout/waves.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import { provisionTestResources } from '../support/resources.ts';

/** The store as the wiring builds it: a start writes its audit record with it. */
const rolloutStore = (
  dynamodb: ConstructorParameters<typeof DynamoDBAuditTrail>[0]['client'],
  tableName: string,
) =>
  new DynamoDBRolloutStore({
    client: dynamodb,
    tableName,
    audit: new DynamoDBAuditTrail({ client: dynamodb, tableName, retentionDays: 1 }),
  });

/**
 * The rollout store on DynamoDB Local (docs/decisions/rollouts-in-waves.md): a rollout of 10,000
 * nodes starts at once, claims its nodes a step at a time, steps a wave, and is read a page at a
 * time under its bound with every node once (`npm run bench -- rollout-store` does the same at
 * 50,000 nodes with the 1 MB bound, and times it); a rollout claiming nodes another holds is refused and
 * lets go of every claim it made, also when two start at once.
 */
let config: MeshConfig;
const patience = 600_000;
const client = () => documentClient(makeDynamoDBClient(config));

beforeAll(async () => {
  config = await provisionTestResources('rollouts');
});

/** Names as long as a node's may be (63 letters), so pages are cut by their bytes. */
const names = (count: number, prefix: string, first = 0) =>
  Array.from(
    { length: count },
    (_, i) => `${prefix}-${String(first + i).padStart(6, '0')}-${'x'.repeat(63 - prefix.length - 8)}`,
  );

/** The facts a test says: every node waiting, or every node applied at its revision. */
class SaidFacts implements RolloutFacts {
  answer: (node: string) => NodeFacts = () => ({});
  async of(nodes: readonly string[]) {
    return new Map(nodes.map((node) => [node, this.answer(node)]));
  }
  async revisions() {
    return new Map<string, number>();
  }
}

function service(
  store: DynamoDBRolloutStore,
  facts = new SaidFacts(),
  behind: string[] = [],
  claimStep?: StepBudget,
) {
  const sent: string[][] = [];
  const rollouts = new Rollouts({
    ...(claimStep ? { claimStep } : {}),
    store,
    facts,
    wave: async (nodes): Promise<PushOutcome> => {
      sent.push([...nodes]);
      return {
        pushed: null,
        flushed: nodes.map((node) => ({ node, revision: 1, round: 1 })),
        rounds: 1,
        behind: [],
      };
    },
    behind: async () => behind,
    exists: async () => true,
    now: () => new Date(),
  });
  return { rollouts, sent };
}

/** The driver's steps until the rollout neither claims nor lets go of claims: what it then is. */
async function settled(rollouts: Rollouts, id: string): Promise<RolloutRecord> {
  for (;;) {
    const record = await rollouts.read(id);
    if (record.state !== 'claiming' && !isReleasing(record)) return record;
    await rollouts.step(id).catch((error: unknown) => {
      if (!(error instanceof RolloutRaceError)) throw error;
    });
  }
}

const upgrade = (version: string): RolloutOrigin => ({ kind: 'upgrade', module: 'web', version });
const options = (waves: string) => rolloutOptions({ waves });

async function claimsOf(nodes: readonly string[]) {
  const items = await getItems(
    client(),
    'test',
    config.inventoryTable,
    nodes.map((node) => ({ pk: claimPartition(node), sk: 'claim' })),
  );
  return new Map(
    [...items.values()].map((item) => [String(item.pk).slice(claimPartition('').length), item.rollout]),
  );
}

/**
 * A tenth of the claims a step and a quarter of the bytes a page, so that 10,000 nodes take as
 * many steps and pages as 50,000 do at the deployed 5,000 claims and 1 MB: the mechanism is the
 * same, at a fifth of the writes.
 */
const smallerClaimStep: StepBudget = { nodes: 1_000, ms: 10_000 };
const smallerPageBytes = pageBytes / 4;

describe('a rollout of 10,000 nodes', () => {
  it(
    'starts, steps its first wave reading that wave alone, and is read a page at a time, every node once, each page under its bound',
    async () => {
      const store = rolloutStore(client(), config.inventoryTable);
      const facts = new SaidFacts();
      const { rollouts, sent } = service(store, facts, [], smallerClaimStep);
      const nodes = names(10_000, 'big');
      const started = await rollouts.start({
        by: localActor(),
        origin: upgrade('2.1'),
        nodes,
        options: options('1%,10%,100%'),
      });
      expect(started.waves.map((w) => w.nodes?.length)).toEqual([100, 900, 9_000]);
      // answered before any claim: the driver makes them
      expect(started).toMatchObject({ state: 'claiming', claims: { claimed: 0, total: 10_000 } });
      expect((await claimsOf(nodes.slice(0, 100))).size).toBe(0);
      const steps: string[] = [];
      for (;;) {
        const { decision } = await rollouts.step(started.id);
        steps.push(decision.kind);
        if (decision.kind !== 'claiming') break;
        expect(decision.claimed).toBeLessThanOrEqual(steps.length * smallerClaimStep.nodes);
      }
      expect(steps.length).toBeGreaterThanOrEqual(10);
      expect(steps.at(-1)).toBe('claimed');
      expect((await claimsOf(nodes.slice(-100))).size).toBe(100);

      // the header is small; every part far below an item's 400 KB
      const header = await client().send(
        new QueryCommand({
          TableName: config.inventoryTable,
          KeyConditionExpression: 'pk = :pk AND sk = :sk',
          ExpressionAttributeValues: { ':pk': rolloutsPartition, ':sk': started.id },
        }),
      );
      const headerBytes = (header.Items?.[0]?.body as Uint8Array | undefined)?.length ?? 0;
      expect(headerBytes).toBeGreaterThan(0);
      expect(headerBytes).toBeLessThan(20_000);
      const parts = await client().send(
        new QueryCommand({
          TableName: config.inventoryTable,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': nodesPartition(started.id) },
        }),
      );
      const biggest = Math.max(...(parts.Items ?? []).map((item) => (item.body as Uint8Array).length));
      expect(biggest).toBeLessThan(100_000);

      const first = await rollouts.step(started.id);
      expect(first.decision).toMatchObject({ kind: 'send', wave: 0 });
      expect(sent.map((wave) => wave.length)).toEqual([100]);
      facts.answer = () => ({ report: { revision: 1, state: 'applied' } });
      const second = await rollouts.step(started.id);
      expect(second.decision).toMatchObject({ kind: 'send', wave: 1 });
      expect(second.record.current).toBe(1);
      const read = await rollouts.read(started.id);
      expect(read.waves.map((w) => w.tally?.counts)).toEqual([
        { applied: 100 },
        { waiting: 900 },
        { pending: 9_000 },
      ]);

      const seen: string[] = [];
      let cursor: { at: number; layout: string } | undefined;
      let pages = 0;
      do {
        const { page, next, layout } = await rollouts.page(
          started.id,
          { ...(cursor ? { at: cursor.at, layout: cursor.layout } : {}) },
          smallerPageBytes,
        );
        pages += 1;
        expect(jsonBytes(page)).toBeLessThanOrEqual(smallerPageBytes);
        seen.push(...page.waves.flatMap((w) => w.nodes.map((n) => n.node)));
        cursor = next === null ? undefined : { at: next, layout };
      } while (cursor);
      expect(pages).toBeGreaterThan(3);
      expect(seen.length).toBe(10_000);
      expect(new Set(seen).size).toBe(10_000);
      expect([...seen].sort()).toEqual([...nodes].sort());
    },
    patience,
  );
});

describe('two rollouts over the same nodes', () => {
  it(
    'refuses the second while it claims, naming the first and some of its nodes; the second lets go of every claim it made',
    async () => {
      const store = rolloutStore(client(), config.inventoryTable);
      // steps of 400 nodes: the second claims 1,200 free nodes in three steps before it meets the first's
      const { rollouts } = service(store, new SaidFacts(), [], { nodes: 400, ms: 10_000 });
      const held = names(1_000, 'ov');
      const a = await rollouts.start({
        by: localActor(),
        origin: { kind: 'on', selector: 'a' },
        nodes: held,
        options: options('10%,100%'),
      });
      expect(await settled(rollouts, a.id)).toMatchObject({ state: 'running' });
      const free = names(1_200, 'ow');
      const second = [...free, ...held.slice(500)];
      const b = await rollouts.start({
        by: localActor(),
        origin: { kind: 'on', selector: 'b' },
        nodes: second,
        options: options('100%'),
      });
      expect(b.state).toBe('claiming');
      for (let step = 1; step <= 3; step += 1)
        expect((await rollouts.step(b.id)).decision).toEqual({
          kind: 'claiming',
          claimed: step * 400,
          total: 1_700,
        });
      expect((await claimsOf(free)).size).toBe(1_200);
      const refused = await rollouts.step(b.id);
      expect(refused.decision.kind).toBe('refused');
      expect(refused.record).toMatchObject({
        state: 'refused',
        refusal: { code: 'rollout_overlap', rollout: a.id, state: 'running', nodes: 400 },
      });
      expect(refused.record.refusal?.some).toHaveLength(5);
      for (const node of refused.record.refusal?.some ?? []) expect(held).toContain(node);
      expect(refused.record.reason).toContain(`held by rollout ${a.id} (running)`);
      expect(await store.running()).toContain(b.id);

      const ended = await settled(rollouts, b.id);
      expect(ended).toMatchObject({ state: 'refused' });
      expect(ended.releasing).toEqual({ released: 1_600, upto: 1_600 });
      expect(await store.running()).not.toContain(b.id);
      const claims = await claimsOf([...free, ...held]);
      expect([...claims.values()].filter((holder) => holder === b.id)).toEqual([]);
      expect(claims.size).toBe(1_000);
      expect(new Set(claims.values())).toEqual(new Set([a.id]));
      const listed = (await store.list({ limit: 50 })).rollouts;
      expect(listed.find((r) => r.id === b.id)).toMatchObject({ state: 'refused' });

      // a halted one holds its nodes still; aborted, it lets them go and the next claims them
      await store.write({ ...(await rollouts.read(a.id)), state: 'halted', reason: 'test' });
      const c = await rollouts.start({
        by: localActor(),
        origin: { kind: 'on', selector: 'c' },
        nodes: held.slice(500),
        options: options('10%,100%'),
      });
      expect(await settled(rollouts, c.id)).toMatchObject({
        state: 'refused',
        refusal: { rollout: a.id, state: 'halted', nodes: 400 },
      });
      // aborted after it ran, it lets go of its claims a step at a time, as the driver steps it
      const abortedA = await rollouts.abort(a.id);
      expect(abortedA.releasing).toEqual({ released: 0, upto: 1_000 });
      expect((await claimsOf(held)).size).toBe(1_000);
      const letGo = await settled(rollouts, a.id);
      expect(letGo).toMatchObject({ state: 'aborted', releasing: { released: 1_000, upto: 1_000 } });
      expect((await claimsOf(held)).size).toBe(0);
      const d = await rollouts.start({
        by: localActor(),
        origin: { kind: 'on', selector: 'd' },
        nodes: held.slice(500),
        options: options('10%,100%'),
      });
      expect(await settled(rollouts, d.id)).toMatchObject({ state: 'running' });
      expect([...(await claimsOf(held.slice(500))).values()].every((holder) => holder === d.id)).toBe(true);
    },
    patience,
  );

  it(
    'an abort while claiming lets go of every claim made, a step at a time',
    async () => {
      const store = rolloutStore(client(), config.inventoryTable);
      const { rollouts } = service(store, new SaidFacts(), [], { nodes: 300, ms: 10_000 });
      const nodes = names(1_000, 'ab');
      const started = await rollouts.start({
        by: localActor(),
        origin: { kind: 'on', selector: 'ab' },
        nodes,
        options: options('100%'),
      });
      await rollouts.step(started.id);
      await rollouts.step(started.id);
      expect((await claimsOf(nodes)).size).toBe(600);
      expect(await rollouts.abort(started.id, localActor())).toMatchObject({
        state: 'aborted',
        releasing: { released: 0, upto: 900 },
      });
      expect(await settled(rollouts, started.id)).toMatchObject({ state: 'aborted' });
      expect((await claimsOf(nodes)).size).toBe(0);
      expect(await store.running()).not.toContain(started.id);
    },
    patience,
  );

  it(
    'an upgrade supersedes a halted upgrade of the same module: that one is aborted, its nodes taken',
    async () => {
      const store = rolloutStore(client(), config.inventoryTable);
      const { rollouts } = service(store);
      const nodes = names(300, 'sup');
      const bad = await rollouts.start({
        by: localActor(),
        origin: upgrade('2.0-bad'),
        nodes,
        options: options('1,100%'),
      });
      await settled(rollouts, bad.id);
      await store.write({ ...(await rollouts.read(bad.id)), state: 'halted', reason: 'test' });
      const good = await rollouts.start({
        by: localActor(),
        origin: upgrade('2.1'),
        nodes,
        options: options('1,100%'),
      });
      expect(await settled(rollouts, good.id)).toMatchObject({ state: 'running' });
      expect(await rollouts.read(bad.id)).toMatchObject({
        state: 'aborted',
        reason: `superseded by rollout ${good.id} (upgrade web 2.1)`,
      });
      expect(new Set((await claimsOf(nodes)).values())).toEqual(new Set([good.id]));
    },
    patience,
  );

  it(
    'of two claiming at once over the same nodes, at most one runs, and a refused one holds nothing',
    async () => {
      const store = rolloutStore(client(), config.inventoryTable);
      const { rollouts } = service(store, new SaidFacts(), [], { nodes: 500, ms: 10_000 });
      for (let round = 0; round < 3; round += 1) {
        const nodes = names(2_000, `race${round}`);
        const both = await Promise.all(
          ['x', 'y'].map((selector) =>
            rollouts.start({
              by: localActor(),
              origin: { kind: 'on', selector },
              nodes,
              options: options('10%,100%'),
            }),
          ),
        );
        const ended = await Promise.all(both.map((r) => settled(rollouts, r.id)));
        const won = ended.filter((r) => r.state === 'running').map((r) => r.id);
        expect(won.length).toBeLessThanOrEqual(1);
        for (const r of ended) expect(['running', 'refused']).toContain(r.state);
        const holders = new Set((await claimsOf(nodes)).values());
        expect([...holders]).toEqual(won);
        if (won[0]) await rollouts.abort(won[0]);
      }
    },
    patience,
  );
});

describe('a start that died between its parts and its header', () => {
  const partitionOf = async (pk: string) =>
    (
      await client().send(
        new QueryCommand({
          TableName: config.inventoryTable,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': pk },
          ConsistentRead: true,
        }),
      )
    ).Items ?? [];
  const put = (item: Record<string, unknown>) =>
    client().send(new PutCommand({ TableName: config.inventoryTable, Item: item }));

  it(
    'leaves a mark the next start sweeps with its parts; a start that got its header keeps its parts, a recent mark is left',
    async () => {
      const store = rolloutStore(client(), config.inventoryTable);
      const { rollouts } = service(store);
      const hourAgo = new Date(Date.now() - 3_600_000).toISOString();
      // ids that sort before any real one: the sweep takes the oldest marks first
      const died = '20000101T000000000Z-000001';
      const recorded = await rollouts.start({
        by: localActor(),
        origin: { kind: 'on', selector: 'swept' },
        nodes: names(500, 'sw'),
        options: options('100%'),
      });
      const recent = '20000101T000000000Z-000003';
      expect((await partitionOf(startingPartition)).map((item) => item.sk)).not.toContain(recorded.id);
      const recordedParts = (await partitionOf(nodesPartition(recorded.id))).length;
      expect(recordedParts).toBeGreaterThan(1);
      await put({ pk: startingPartition, sk: died, startedAt: hourAgo });
      for (const n of [0, 1, 2]) await put({ pk: nodesPartition(died), sk: `nodes#dead#0.${n}`, count: 1 });
      await put({ pk: startingPartition, sk: '20000101T000000000Z-000002', startedAt: hourAgo });
      await put({ pk: startingPartition, sk: recent, startedAt: new Date().toISOString() });
      // a header that came after all: the mark goes, its parts stay
      await put({ pk: startingPartition, sk: recorded.id, startedAt: hourAgo });

      await rollouts.start({
        by: localActor(),
        origin: { kind: 'on', selector: 'sweeper' },
        nodes: names(10, 'swr'),
        options: options('100%'),
      });

      const marks = (await partitionOf(startingPartition)).map((item) => String(item.sk));
      expect(marks).toContain(recent);
      expect(marks).not.toContain(died);
      expect(marks).not.toContain(recorded.id);
      expect(await partitionOf(nodesPartition(died))).toEqual([]);
      expect((await partitionOf(nodesPartition(recorded.id))).length).toBe(recordedParts);
      expect((await rollouts.read(recorded.id)).state).toBe('claiming');
    },
    patience,
  );
});

describe('a page read while a step replaces its parts', () => {
  it('is read again from the newer record, never answered with a part that is gone', async () => {
    const store = rolloutStore(client(), config.inventoryTable);
    const { rollouts } = service(store);
    const nodes = names(30, 'page-race');
    const started = await rollouts.start({
      origin: upgrade('9.0'),
      nodes,
      options: options('100%'),
      by: localActor(),
    });
    await settled(rollouts, started.id);
    // the header as a reader holds it, then a part it names deleted (as a newer write's clean-up does)
    const read = await store.read(started.id);
    const kept = read?.waves[0]?.kept as { parts: Array<{ sk: string }> } | undefined;
    const sk = kept?.parts[0]?.sk as string;
    const docs = client();
    const partKey = { pk: nodesPartition(started.id), sk };
    const [part] = [...(await getItems(docs, 'test', config.inventoryTable, [partKey])).values()];
    await docs.send(new DeleteCommand({ TableName: config.inventoryTable, Key: partKey }));
    await expect(store.nodesFrom(read as RolloutRecord, 0, pageBytes)).rejects.toThrow(RolloutRaceError);
    // what the newer write left: the part back under its name, so the next read finds it
    await docs.send(new PutCommand({ TableName: config.inventoryTable, Item: part }));
    const { page } = await rollouts.page(started.id, {}, pageBytes);
    expect(page.waves[0]?.nodes).toHaveLength(30);
  });
});
