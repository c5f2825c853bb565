import { generateKeyPairSync } from 'node:crypto';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { exportJWK, generateKeyPair } from 'jose';
import { SealedDeclarationOpener } from '../lib/clients/host/agent/declaration-opener.ts';
import { localPartsFor } from '../lib/local/parts.ts';
import { makeDynamoDBClient } from '../lib/server/adapters/aws-clients.ts';
import { assignmentItem, carrierItem, nodeItem } from '../lib/server/adapters/dynamodb/mesh-items.ts';
import { documentClient } from '../lib/server/adapters/dynamodb/requests.ts';
import {
  compose,
  type MintDetails,
  newGeneration,
  newProvisionSecret,
  sealWithHpke,
} from '../lib/server/core/mesh/declaration.ts';
import type { NodeSnapshot, SealingKey } from '../lib/server/core/mesh/model.ts';
import { sealingKeyOf } from '../lib/server/core/sealing/sealed-secret.ts';
import { batchPut, seedConsumers, seedingClient } from '../test/support/large-provider.ts';
import { enrolmentItemFor } from '../test/support/sealing.ts';
import { benchEnvironment } from './support/environment.ts';
import { itemMeter } from './support/item-meter.ts';
import { median } from './support/stats.ts';
import type { BenchTable } from './support/table.ts';

/**
 * What sealing costs where it is paid (docs/decisions/sealed-secrets.md): the mint, while
 * composing a node with N relations never minted (two HPKE seals a provision), and the host's
 * open of a declaration of N provisions before its hook runs (one open each). Beside each, the
 * same work as it was before sealing, in the same run: the mint with the secret kept as it is
 * (no seal), and a declaration with nothing to open. `MESH_BENCH_SEALING_RUNS` (default 9).
 */
const runs = Number(process.env.MESH_BENCH_SEALING_RUNS ?? 9);
const sizes = [20, 200, 2_000];

async function hostKeys() {
  const pair = await generateKeyPair('ECDH-ES', { crv: 'X25519', extractable: true });
  return { key: sealingKeyOf(await exportJWK(pair.publicKey)) as SealingKey, privateKey: pair.privateKey };
}

/** A consumer with `size` relations to `size` providers, none minted yet. */
function consumerOf(size: number, key: SealingKey): NodeSnapshot {
  return {
    node: 'web',
    assignments: Array.from({ length: size }, (_, i) => ({ module: `m${i}`, version: null, provides: null })),
    relations: Array.from({ length: size }, (_, i) => ({
      consumerModule: `m${i}`,
      providerNode: `p${i}`,
      providerModule: 'db',
      kind: 'sql',
    })),
    dependents: [],
    provisions: [],
    grants: [],
    sent: undefined,
    mark: undefined,
    sealingKey: key,
  };
}

const unsealed: MintDetails['seal'] = async (secret) => secret;

export async function run(): Promise<BenchTable[]> {
  const tables = await sealingTables();
  return [...tables, await followUpTable()];
}

async function sealingTables(): Promise<BenchTable[]> {
  const web = await hostKeys();
  const providers = await hostKeys();
  const mintRows: Array<Array<string | number>> = [];
  const openRows: Array<Array<string | number>> = [];
  for (const size of sizes) {
    const snapshot = consumerOf(size, web.key);
    const keys = new Map(snapshot.relations.map((r) => [r.providerNode, providers.key]));
    const mint = (seal: MintDetails['seal']): MintDetails => ({
      secret: newProvisionSecret,
      now: () => '2026-01-01T00:00:00.000Z',
      generation: newGeneration,
      seal,
    });
    const times = {
      sealed: [] as number[],
      plain: [] as number[],
      open: [] as number[],
      pass: [] as number[],
    };
    let sealedBody = '';
    let plainBody = '';
    for (let i = 0; i < runs; i += 1) {
      // alternate which goes first, so neither always runs on a warmer process
      for (const way of i % 2 === 0 ? (['sealed', 'plain'] as const) : (['plain', 'sealed'] as const)) {
        const started = performance.now();
        const composed = await compose(snapshot, keys, mint(way === 'sealed' ? sealWithHpke : unsealed));
        times[way].push(performance.now() - started);
        if (way === 'sealed') sealedBody = composed.canonical;
        else
          plainBody = JSON.stringify({
            ...composed.declaration,
            provisions: composed.declaration.provisions.map(({ sealed, ...p }) => ({ ...p, secret: sealed })),
          });
      }
      const opener = new SealedDeclarationOpener('web', () => web.privateKey);
      let started = performance.now();
      const opened = await opener.open(sealedBody);
      times.open.push(performance.now() - started);
      if (!opened.ok) throw new Error(opened.reason);
      started = performance.now();
      await opener.open(plainBody);
      times.pass.push(performance.now() - started);
    }
    const [sealed, plain, open, pass] = [times.sealed, times.plain, times.open, times.pass].map(median) as [
      number,
      number,
      number,
      number,
    ];
    mintRows.push([
      size,
      plain.toFixed(1),
      sealed.toFixed(1),
      ((sealed / size) * 1000).toFixed(0),
      (sealed / plain).toFixed(1),
      Buffer.byteLength(plainBody),
      Buffer.byteLength(sealedBody),
    ]);
    openRows.push([
      size,
      pass.toFixed(1),
      open.toFixed(1),
      ((open / size) * 1000).toFixed(0),
      (open / pass).toFixed(1),
    ]);
  }
  return [
    {
      title: `Minting N provisions while composing the consumer (median of ${runs})`,
      columns: [
        'provisions',
        'unsealed ms',
        'sealed ms',
        'sealed µs/provision',
        'ratio',
        'unsealed bytes',
        'sealed bytes',
      ],
      rows: mintRows,
      notes: ['sealed: a new secret sealed to the consumer and to the provider (HPKE X25519, AES-256-GCM)'],
    },
    {
      title: `The host opening a declaration of N provisions before its hook (median of ${runs})`,
      columns: ['provisions', 'nothing to open ms', 'open ms', 'µs/provision', 'ratio'],
      rows: openRows,
    },
  ];
}

/**
 * Consumers of the provider in each row of the follow-up's table: `MESH_BENCH_SEALING_FOLLOW_SIZES`
 * (default 1, 1,000 and 10,000); each row is the median of `MESH_BENCH_SEALING_FOLLOW_RUNS`
 * handlings (default 3, and 1 from 10,000 consumers, where one handling takes minutes).
 */
const followSizes = (process.env.MESH_BENCH_SEALING_FOLLOW_SIZES ?? '1,1000,10000').split(',').map(Number);
const followRuns = (size: number) =>
  Number(process.env.MESH_BENCH_SEALING_FOLLOW_RUNS ?? (size >= 10_000 ? 1 : 3));

const newSealingKey = (): SealingKey =>
  sealingKeyOf(generateKeyPairSync('x25519').publicKey.export({ format: 'jwk' })) as SealingKey;

/**
 * What `enrolled:<provider>` costs on DynamoDB Local when the provider's key changed (a new
 * enrolment or `mesh-host rotate`) and N consumers hold provisions sealed to its old key: the
 * follow-up's marks (DynamoDBSealingFollowUp: the provider's partition read, its consumers
 * marked 50 a transaction), then the push it asks (each consumer composed and its provision
 * minted again, sealed to the new key, and sent; the provider held until then, then sent with
 * every grant), as settleEnrolled does them, measured apart. Before the first handling the
 * mesh is pushed once, so every row measures a mesh that was sent before.
 */
async function followUpTable(): Promise<BenchTable> {
  const environment = await benchEnvironment();
  const rows: Array<Array<string | number>> = [];
  const provider = { node: 'db', module: 'pg', kind: 'sql' } as const;
  try {
    for (const size of followSizes) {
      const config = await environment.provision(`bench-seal-follow-${size}`);
      const seeding = seedingClient(config.endpoints?.dynamodb);
      await batchPut(seeding, config.inventoryTable, [
        nodeItem(provider.node, '2026-01-01T00:00:00.000Z'),
        assignmentItem(provider.node, { module: provider.module, version: null, provides: provider.kind }),
        carrierItem(provider.module, provider.node, null),
        enrolmentItemFor(provider.node),
      ]);
      await seedConsumers(seeding, config.inventoryTable, provider, size);
      const client = makeDynamoDBClient(config);
      const meter = itemMeter(client);
      const parts = localPartsFor(config, { clients: { dynamodb: client }, pushTimeoutMs: 3_600_000 });
      const sealing = parts.consumer.sealing;
      if (!sealing) throw new Error('the consumer follows no keys');
      const warm = await parts.pushFlow.push({ behind: true });
      if (warm.behind.length > 0) throw new Error(`${warm.behind.length} nodes still behind after seeding`);
      const follow: number[][] = [];
      const push: number[][] = [];
      for (let run = 0; run < followRuns(size); run += 1) {
        // what the spend or a rotation writes: the provider's enrolment, with its new key
        await documentClient(client).send(
          new PutCommand({
            TableName: config.inventoryTable,
            Item: enrolmentItemFor(provider.node, newSealingKey()),
          }),
        );
        const marked = await meter.measure(() => sealing.followKeys(provider.node));
        const pushed = await meter.measure(() =>
          parts.pushFlow.push({ node: provider.node }, { requestedBy: `enrolment of ${provider.node}` }),
        );
        if (marked.value?.marked.length !== size + 1)
          throw new Error(`marked ${marked.value?.marked.length} nodes, not ${size + 1}`);
        // every consumer sent again, and the provider once they all minted its grants
        const sent = new Set(pushed.value.flushed.map((f) => f.node));
        if (sent.size !== size + 1 || !sent.has(provider.node) || pushed.value.behind.length > 0)
          throw new Error(`sent ${sent.size} nodes, ${pushed.value.behind.length} behind`);
        follow.push([marked.ms, marked.read, marked.written, marked.requests]);
        push.push([pushed.ms, pushed.read, pushed.written, pushed.requests]);
      }
      const column = (runs: number[][], at: number) => median(runs.map((r) => r[at] as number));
      const [followMs, pushMs] = [column(follow, 0), column(push, 0)];
      rows.push([
        size,
        followRuns(size),
        followMs.toFixed(0),
        column(follow, 1),
        column(follow, 2),
        pushMs.toFixed(0),
        column(push, 1),
        column(push, 2),
        column(push, 3),
        ((followMs + pushMs) / size).toFixed(1),
      ]);
      client.destroy();
      seeding.destroy();
    }
  } finally {
    await environment.stop();
  }
  return {
    title: 'Handling enrolled:<provider> after its key changed, N consumers sealed to the old key (medians)',
    columns: [
      'consumers',
      'runs',
      'marks ms',
      'marks read',
      'marks written',
      'push ms',
      'push read',
      'push written',
      'push requests',
      'ms/consumer',
    ],
    rows,
    notes: [
      'marks: the follow-up (the provider and each consumer marked, 50 nodes a transaction); push: the push it asks, every consumer minted again and sent, then the provider',
      'read and written in items (a Query the items it looked at; a transaction every item it holds)',
    ],
  };
}
