import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { makeDynamoDBClient } from '../../lib/adapters/aws-clients.ts';
import { DynamoDBAuditTrail } from '../../lib/adapters/dynamodb/audit-trail.ts';
import { documentClient, getItems } from '../../lib/adapters/dynamodb/requests.ts';
import { nodesPartition } from '../../lib/adapters/dynamodb/rollout-chunks.ts';
import { claimPartition } from '../../lib/adapters/dynamodb/rollout-claims.ts';
import { DynamoDBRolloutStore, rolloutsPartition } from '../../lib/adapters/dynamodb/rollout-store.ts';
import type { MeshConfig } from '../../lib/config.ts';
import { localActor } from '../../lib/core/audit/record.ts';
import type { PushOutcome } from '../../lib/core/ports.ts';
import type { NodeFacts } from '../../lib/core/rollout/advance.ts';
import { RolloutOverlapError } from '../../lib/core/rollout/errors.ts';
import type { RolloutFacts } from '../../lib/core/rollout/ports.ts';
import type { RolloutOrigin } from '../../lib/core/rollout/record.ts';
import { Rollouts } from '../../lib/core/rollout/service.ts';
import { rolloutOptions } from '../../lib/core/rollout/waves.ts';
import { jsonBytes, pageBytes } from '../../lib/core/view-pages.ts';
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
 * The rollout store on DynamoDB Local (docs/decisions/rollouts-in-waves.md): a rollout of 50,000
 * nodes starts and steps a wave, read a page at a time under 1 MB with every node once; a start
 * over nodes another rollout holds is refused and changes nothing, also when two start at once.
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

function service(store: DynamoDBRolloutStore, facts = new SaidFacts(), behind: string[] = []) {
  const sent: string[][] = [];
  const rollouts = new Rollouts({
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

describe('a rollout of 50,000 nodes', () => {
  it(
    'starts, steps its first wave reading that wave alone, and is read a page at a time, every node once, each page under 1 MB',
    async () => {
      const store = rolloutStore(client(), config.inventoryTable);
      const facts = new SaidFacts();
      const { rollouts, sent } = service(store, facts);
      const nodes = names(50_000, 'big');
      const started = await rollouts.start({
        by: localActor(),
        origin: upgrade('2.1'),
        nodes,
        options: options('1%,10%,100%'),
      });
      expect(started.waves.map((w) => w.nodes?.length)).toEqual([500, 4_500, 45_000]);

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
      expect(sent.map((wave) => wave.length)).toEqual([500]);
      facts.answer = () => ({ report: { revision: 1, state: 'applied' } });
      const second = await rollouts.step(started.id);
      expect(second.decision).toMatchObject({ kind: 'send', wave: 1 });
      expect(second.record.current).toBe(1);
      const read = await rollouts.read(started.id);
      expect(read.waves.map((w) => w.tally?.counts)).toEqual([
        { applied: 500 },
        { waiting: 4_500 },
        { pending: 45_000 },
      ]);

      const seen: string[] = [];
      let cursor: { at: number; layout: string } | undefined;
      let pages = 0;
      do {
        const { page, next, layout } = await rollouts.page(
          started.id,
          { ...(cursor ? { at: cursor.at, layout: cursor.layout } : {}) },
          pageBytes,
        );
        pages += 1;
        expect(jsonBytes(page)).toBeLessThanOrEqual(pageBytes);
        seen.push(...page.waves.flatMap((w) => w.nodes.map((n) => n.node)));
        cursor = next === null ? undefined : { at: next, layout };
      } while (cursor);
      expect(pages).toBeGreaterThan(3);
      expect(seen.length).toBe(50_000);
      expect(new Set(seen).size).toBe(50_000);
      expect([...seen].sort()).toEqual([...nodes].sort());
    },
    patience,
  );
});

describe('two rollouts over the same nodes', () => {
  it(
    'refuses the second, naming the first and how many nodes it holds, and changes nothing',
    async () => {
      const store = rolloutStore(client(), config.inventoryTable);
      const { rollouts } = service(store);
      const a = await rollouts.start({
        by: localActor(),
        origin: { kind: 'on', selector: 'a' },
        nodes: names(1_000, 'ov'),
        options: options('10%,100%'),
      });
      const second = names(1_000, 'ov', 500);
      const refused = await rollouts
        .start({
          by: localActor(),
          origin: { kind: 'on', selector: 'b' },
          nodes: second,
          options: options('10%,100%'),
        })
        .catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(RolloutOverlapError);
      expect(refused).toMatchObject({ holder: a.id, nodes: 500, state: 'running' });
      const claims = await claimsOf(second);
      expect([...claims.values()].every((holder) => holder === a.id)).toBe(true);
      expect(claims.size).toBe(500);
      const listed = (await store.list({ limit: 50 })).rollouts;
      expect(listed.filter((r) => r.origin.kind === 'on' && r.origin.selector === 'b')).toEqual([]);

      // a halted one holds its nodes still; aborted, it lets them go and the second starts
      await store.write({ ...(await rollouts.read(a.id)), state: 'halted', reason: 'test' });
      await expect(
        rollouts.start({
          by: localActor(),
          origin: { kind: 'on', selector: 'b' },
          nodes: second,
          options: options('10%,100%'),
        }),
      ).rejects.toBeInstanceOf(RolloutOverlapError);
      await rollouts.abort(a.id);
      expect((await claimsOf(names(1_000, 'ov'))).size).toBe(0);
      const b = await rollouts.start({
        by: localActor(),
        origin: { kind: 'on', selector: 'b' },
        nodes: second,
        options: options('10%,100%'),
      });
      expect([...(await claimsOf(second)).values()].every((holder) => holder === b.id)).toBe(true);
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
      await store.write({ ...(await rollouts.read(bad.id)), state: 'halted', reason: 'test' });
      const good = await rollouts.start({
        by: localActor(),
        origin: upgrade('2.1'),
        nodes,
        options: options('1,100%'),
      });
      expect(await rollouts.read(bad.id)).toMatchObject({
        state: 'aborted',
        reason: `superseded by rollout ${good.id} (upgrade web 2.1)`,
      });
      expect(new Set((await claimsOf(nodes)).values())).toEqual(new Set([good.id]));
    },
    patience,
  );

  it(
    'of two started at once over the same nodes, at most one is recorded, and a refused one holds nothing',
    async () => {
      const store = rolloutStore(client(), config.inventoryTable);
      const { rollouts } = service(store);
      for (let round = 0; round < 3; round += 1) {
        const nodes = names(2_000, `race${round}`);
        const both = await Promise.allSettled(
          ['x', 'y'].map((selector) =>
            rollouts.start({
              by: localActor(),
              origin: { kind: 'on', selector },
              nodes,
              options: options('10%,100%'),
            }),
          ),
        );
        const won = both.flatMap((r) => (r.status === 'fulfilled' ? [r.value.id] : []));
        const lost = both.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
        expect(won.length).toBeLessThanOrEqual(1);
        for (const reason of lost) expect(reason).toBeInstanceOf(RolloutOverlapError);
        const holders = new Set((await claimsOf(nodes)).values());
        expect([...holders]).toEqual(won);
        if (won[0]) await rollouts.abort(won[0]);
      }
    },
    patience,
  );
});
