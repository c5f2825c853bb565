import { invocation } from '../lib/local/aws-quotas.ts';
import { enforcingQuotas } from '../lib/local/sdk-quotas.ts';
import { DynamoDBAuditTrail } from '../lib/server/adapters/audit/audit-trail.ts';
import { makeDynamoDBClient } from '../lib/server/adapters/aws-clients.ts';
import { factsItemKey, nodeItemKey } from '../lib/server/adapters/dynamodb/keys.ts';
import { documentClient, getItems, type Item } from '../lib/server/adapters/dynamodb/requests.ts';
import { DynamoAgentVersions } from '../lib/server/adapters/mesh/agent-versions.ts';
import { DynamoDBRolloutStore } from '../lib/server/adapters/rollout/rollout-store.ts';
import { localActor } from '../lib/server/core/audit/record.ts';
import type { PushOutcome } from '../lib/server/core/push/ports.ts';
import type { RolloutFacts } from '../lib/server/core/rollout/ports.ts';
import { Rollouts } from '../lib/server/core/rollout/service.ts';
import { rolloutOptions } from '../lib/server/core/rollout/waves.ts';
import { seed } from './push.bench.ts';
import { behindItems } from './push-state.bench.ts';
import { benchEnvironment } from './support/environment.ts';
import { median } from './support/stats.ts';
import type { BenchTable } from './support/table.ts';

/**
 * `npm run bench -- agent-undo`: an agent upgrade of N nodes taken back, at 10,000 and 50,000
 * nodes (MESH_BENCH_SIZES), on DynamoDB Local with AWS's quotas enforced on every request
 * (docs/local-and-aws.md) and each function held to its timeout:
 * - the step that sends the upgrade's one wave (`--waves 100%`): the version set on N nodes, each
 *   node's item and facts read first so it remembers what its host ran (core/mesh/agent-before.ts),
 *   inside rollout-advance's 330 s; beside it, in the same run, those reads alone (what the wave
 *   costs more than setting the version blind, as before the undo);
 * - `mesh rollout undo`: the request as rollout-undo answers it (API Gateway's 29 s): the
 *   upgrade's sent nodes read, the undo rollout recorded;
 * - the undo's claiming (every step inside 330 s) and the step that sends its wave: N nodes set
 *   back, each read first.
 * The waves' pushes are left out (aws-limits' push rows hold a push of 50,000 behind nodes): each
 * wave answers its nodes sent at revision 1. Releases count as published.
 */
const say = (text: string) => process.stderr.write(`bench agent-undo: ${text}\n`);
const s = (ms: number) => (ms / 1000).toFixed(1);
const perThousand = (ms: number, nodes: number) => `${((ms / nodes) * 1000).toFixed(0)} ms`;

const noFacts: RolloutFacts = { of: async () => new Map(), revisions: async () => new Map() };
const sentAll = async (nodes: readonly string[]): Promise<PushOutcome> => ({
  pushed: null,
  flushed: nodes.map((node) => ({ node, revision: 1, round: 1 })),
  rounds: 1,
  behind: [],
});

export async function run(): Promise<BenchTable[]> {
  const sizes = (process.env.MESH_BENCH_SIZES ?? '10000,50000').split(',').map(Number);
  const rows: Array<Array<string | number>> = [];
  for (const size of sizes) {
    const environment = await benchEnvironment();
    try {
      const config = await environment.provision(`undo-${size}-${Math.random().toString(36).slice(2, 8)}`);
      // N nodes as mesh apply leaves them, each host reporting agent 1.0.0
      const items = behindItems(size);
      const nodeSk = nodeItemKey('').sk;
      const nodes = items.filter((item) => item.sk === nodeSk).map((item) => String(item.node));
      const facts: Item[] = nodes.map((node) => ({
        ...factsItemKey(node),
        os: 'debian-12',
        kernel: '6.1.0',
        arch: 'x64',
        agent: '1.0.0',
        cpus: 2,
        memoryBytes: 2 ** 30,
        bootedAt: '2026-12-01T00:00:00.000Z',
      }));
      const setup = makeDynamoDBClient(config, { requestTimeoutMs: 30_000 });
      const seededAt = performance.now();
      await seed(documentClient(setup), config.inventoryTable, [...items, ...facts]);
      setup.destroy();
      say(`${size}: seeded in ${s(performance.now() - seededAt)} s`);

      const raw = enforcingQuotas(makeDynamoDBClient(config, { requestTimeoutMs: 30_000 }));
      const client = documentClient(raw);
      const table = { client, tableName: config.inventoryTable };
      const versions = new DynamoAgentVersions(table);
      const store = new DynamoDBRolloutStore({
        ...table,
        audit: new DynamoDBAuditTrail({ ...table, retentionDays: 1 }),
      });
      const rollouts = new Rollouts({
        store,
        facts: noFacts,
        wave: sentAll,
        behind: async () => [],
        exists: async () => true,
        now: () => new Date(),
        setAgentVersion: (version, sent, rollout, limit) =>
          versions.setAgentVersion(version, sent, rollout, limit),
        restoreAgentVersion: (rollout, version, sent) => versions.restoreAgentVersion(rollout, version, sent),
        published: async (versions) => new Map(versions.map((version) => [version, ['x64']])),
        askedOf: (asked, asking) => versions.askedOf(asked, asking),
      });
      /** Steps the rollout, each step as rollout-advance takes it, until it sends: every step's time, and the send's. */
      const untilSent = async (id: string) => {
        const stepsMs: number[] = [];
        for (;;) {
          const started = performance.now();
          // answered as rollout-advance answers the flow: small, whatever the rollout's size
          const kind = await invocation(
            'rollout-advance',
            async () => (await rollouts.step(id)).decision.kind,
          );
          stepsMs.push(performance.now() - started);
          if (kind === 'send') return { stepsMs, sendMs: stepsMs.at(-1) ?? 0 };
          if (stepsMs.length > 10_000) throw new Error(`rollout ${id} sent nothing in 10,000 steps`);
        }
      };

      // answered as rollout-start answers: its id, not the record of every node
      const startedAt = performance.now();
      const upgrade = await invocation(
        'rollout-start',
        async () => {
          const { id } = await rollouts.start({
            origin: { kind: 'agent', version: '2.0.0' },
            nodes,
            options: rolloutOptions({ waves: '100%' }),
            by: localActor(),
          });
          return { id };
        },
        { payload: { body: JSON.stringify({ agent: '2.0.0', nodes, waves: '100%' }) } },
      );
      const startMs = performance.now() - startedAt;
      const upgraded = await untilSent(upgrade.id);
      say(
        `${size}: upgrade sent in ${s(upgraded.sendMs)} s after ${upgraded.stepsMs.length - 1} claiming steps`,
      );
      // the reads the wave made, alone: what it costs more than setting the version blind
      const readsAt = performance.now();
      for (let at = 0; at < nodes.length; at += 200)
        await getItems(
          client,
          'the inventory table',
          config.inventoryTable,
          nodes.slice(at, at + 200).flatMap((node) => [nodeItemKey(node), factsItemKey(node)]),
        );
      const readsMs = performance.now() - readsAt;

      const askedAt = performance.now();
      const undoId = await invocation('rollout-undo', () => rollouts.undo(upgrade.id, localActor()));
      const undoAskMs = performance.now() - askedAt;
      const undone = await untilSent(undoId);
      const claimSteps = undone.stepsMs.slice(0, -1);
      say(`${size}: undo asked in ${s(undoAskMs)} s, sent in ${s(undone.sendMs)} s`);

      const sample = await getItems(client, 'the inventory table', config.inventoryTable, [
        nodeItemKey(nodes[0] as string),
        nodeItemKey(nodes.at(-1) as string),
      ]);
      const back = [...sample.values()].every((item) => item.agentVersion === '1.0.0' && !item.agentBefore);
      raw.destroy();
      rows.push([
        size,
        s(startMs),
        `${s(upgraded.sendMs)} (${perThousand(upgraded.sendMs, size)})`,
        `${s(readsMs)} (${((readsMs / upgraded.sendMs) * 100).toFixed(0)}%)`,
        s(undoAskMs),
        `${claimSteps.length}, median ${s(median(claimSteps))}, longest ${s(Math.max(...claimSteps))}`,
        `${s(undone.sendMs)} (${perThousand(undone.sendMs, size)})`,
        back ? 'passed: set back to 1.0.0' : 'FAILED: not set back',
      ]);
    } catch (error) {
      const reason = `${(error as Error).name}: ${(error as Error).message}`.slice(0, 240);
      rows.push([size, '', '', '', '', '', '', `FAILED: ${reason}`]);
      say(`${size}: failed: ${reason}`);
    } finally {
      await environment.stop();
    }
  }
  return [
    {
      title: 'agent-undo: an agent upgrade of N nodes and its undo, each request and step held to its quota',
      columns: [
        'nodes',
        'upgrade started, s',
        'upgrade wave set, s (a 1,000)',
        'of it the reads, s (share)',
        'undo asked, s',
        'undo claiming steps',
        'undo wave set back, s (a 1,000)',
        'outcome',
      ],
      rows,
      notes: [
        'started: rollout-start (29 s) reading every node’s facts to check a release is published for each host’s architecture, and recording the rollout.',
        'wave set: the rollout-advance step that sets the version on every node and remembers each host’s (330 s); the wave’s push is left out.',
        'reads: the same BatchGets alone, in the same run: what the wave pays to remember the version before.',
        'undo asked: rollout-undo (29 s, API Gateway’s limit) reading the sent nodes, checking what each host goes back to is published for its architecture (its node item and facts), and recording the undo rollout.',
        'every DynamoDB request holds the enforced quotas (item and transaction sizes, TransactionConflict); 2 shared cores.',
      ],
    },
  ];
}
