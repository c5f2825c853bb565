import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { FileAgentState } from '../lib/clients/host/agent/file-state.ts';
import { HttpControlPlane } from '../lib/clients/host/agent/http-control-plane.ts';
import { ShellApplier } from '../lib/clients/host/agent/shell-applier.ts';
import { hostApiClient } from '../lib/clients/host/host-api-client.ts';
import { signingKeyOf } from '../lib/clients/host/keys.ts';
import { startLocalApi } from '../lib/local/http-server.ts';
import { localPartsFor } from '../lib/local/parts.ts';
import { inlineBytes } from '../lib/server/adapters/dynamodb/declaration-parts.ts';
import { localActor } from '../lib/server/core/audit/record.ts';
import { compose } from '../lib/server/core/mesh/declaration.ts';
import type { SealingKey } from '../lib/server/core/mesh/model.ts';
import { Pusher } from '../lib/server/core/push/pusher.ts';
import { sealingKeyOf } from '../lib/server/core/sealing/sealed-secret.ts';
import { addEnrolledNode } from '../test/support/enrolled-nodes.ts';
import { seedConsumers, seedingClient } from '../test/support/large-provider.ts';
import { allEnrolled, unusedMint } from '../test/support/sealing.ts';
import { benchEnvironment } from './support/environment.ts';
import { median } from './support/stats.ts';
import type { BenchTable } from './support/table.ts';

/** Counts the requests a client makes, for the figures beside each time. */
function counted(client: DynamoDBClient) {
  const counts = { requests: 0 };
  client.middlewareStack.add(
    (next) => async (args) => {
      counts.requests += 1;
      return next(args);
    },
    { step: 'initialize', name: 'scaleProviderMeter' },
  );
  return counts;
}

type Figures = { ms: number[]; requests: number[] };
const row = (label: string, size: number, figures: Figures, extra: string | number = '') => [
  label,
  size,
  Math.round(median(figures.ms)),
  median(figures.requests),
  extra,
];

/**
 * One provider with thousands of consumers (issue 22): a broker node with MESH_BENCH_PROVIDER_SIZES
 * consumers (default 300, today's one-item limit, and 10,000), their grants seeded through the
 * store, then for each of MESH_BENCH_PROVIDER_RUNS runs (default 3) one grant more, which makes
 * the broker behind, and the broker composed and sent (`Pusher.sendNode`: its partition read, the
 * compose, the parts and the head); then its enrolled host's real fetch of
 * `GET /hosts/broker/declaration` through the local API (proof, handler, head and parts, the
 * answer's JSON), a fetch with its ETag (304), and the apply: the declaration written as the
 * agent writes it and a hook that reads and parses it.
 */
export async function run(): Promise<BenchTable[]> {
  const sizes = (process.env.MESH_BENCH_PROVIDER_SIZES ?? '300,10000').split(',').map(Number);
  const runs = Number(process.env.MESH_BENCH_PROVIDER_RUNS ?? 3);
  const environment = await benchEnvironment();
  const rows: Array<Array<string | number>> = [];
  const notes: string[] = [];
  const provider = { node: 'broker', module: 'rabbit', kind: 'amqp' };
  const hostDir = mkdtempSync(join(tmpdir(), 'mesh-bench-provider-'));
  try {
    for (const size of sizes) {
      const config = await environment.provision(`bench-provider-${size}`);
      // DynamoDB Local serves a 1 MB page of this partition in seconds on a loaded machine, past
      // the 3 s the product's client allows (AWS serves it in a fraction of one): wait, and say so.
      const client = new DynamoDBClient({
        region: config.region,
        maxAttempts: 3,
        requestHandler: { connectionTimeout: 1_000, requestTimeout: 120_000 },
        endpoint: config.endpoints?.dynamodb,
        credentials: { accessKeyId: 'meshlocal', secretAccessKey: 'meshlocal' },
      });
      const counts = counted(client);
      const parts = localPartsFor(config, { clients: { dynamodb: client } });
      const keys = await addEnrolledNode(parts, 'broker');
      await parts.meshService.assign('broker', 'rabbit', 'amqp', localActor());
      const seeded = performance.now();
      const seeding = seedingClient(config.endpoints?.dynamodb);
      // Each grant sealed to the key the broker enrolled with: a grant sealed to another key
      // waits for a re-seal, and the broker is not sent.
      const providerKey = sealingKeyOf(keys.sealing.publicJwk) as SealingKey;
      await seedConsumers(seeding, config.inventoryTable, provider, size, {
        consumerSide: false,
        providerKey,
      });
      process.stderr.write(
        `bench scale-provider: seeded ${size} consumers in ${((performance.now() - seeded) / 1000).toFixed(1)} s\n`,
      );
      const pusher = new Pusher({ store: parts.pushStore });
      await pusher.sendNode('broker');

      const api = await startLocalApi({ port: 0, parts });
      const host = new HttpControlPlane(
        hostApiClient(api.url, signingKeyOf('broker', keys), { timeoutMs: 120_000 }),
        'broker',
      );
      const state = new FileAgentState(join(hostDir, String(size)));
      const hook = `${process.execPath} -e "JSON.parse(require('fs').readFileSync(process.env.MESH_DECLARATION, 'utf8'))"`;
      const applier = new ShellApplier(hook, 'broker', () => undefined);
      const figures = {
        compose: { ms: [] as number[], requests: [] as number[] },
        send: { ms: [] as number[], requests: [] as number[] },
        fetch: { ms: [] as number[], requests: [] as number[] },
        unchanged: { ms: [] as number[], requests: [] as number[] },
        apply: { ms: [] as number[], requests: [] as number[] },
      };
      let bytes = 0;
      let answerBytes = 0;
      for (let index = 0; index < runs; index += 1) {
        // One consumer more makes the provider behind, as a consume and its consumer's push would.
        await seedConsumers(seeding, config.inventoryTable, provider, 1, {
          first: size + index,
          consumerSide: false,
          providerKey,
        });
        const measure = async <T>(into: Figures, fn: () => Promise<T>): Promise<T> => {
          const before = counts.requests;
          const started = performance.now();
          const value = await fn();
          into.ms.push(performance.now() - started);
          into.requests.push(counts.requests - before);
          return value;
        };
        const composed = await measure(figures.compose, async () => {
          const snapshot = await parts.pushStore.readNode('broker');
          const read = snapshot as NonNullable<typeof snapshot>;
          return compose(read, allEnrolled(read), unusedMint(''));
        });
        bytes = Buffer.byteLength(composed.canonical);
        await measure(figures.send, () => pusher.sendNode('broker'));
        const fetched = await measure(figures.fetch, () => host.fetchDeclaration(undefined));
        if (fetched.status !== 'changed') throw new Error(`the host fetched ${fetched.status}`);
        answerBytes = Buffer.byteLength(fetched.body);
        await measure(figures.unchanged, () => host.fetchDeclaration(fetched.etag));
        await measure(figures.apply, async () => {
          const path = await state.writeDeclaration(fetched.body);
          const applied = await applier.apply(path, fetched.revision, new AbortController().signal);
          if (!applied.ok) throw new Error(`the apply hook failed: ${JSON.stringify(applied)}`);
        });
      }
      const stored = bytes > inlineBytes ? `${Math.ceil(bytes / inlineBytes)} parts` : 'one item';
      const kib = `${Math.round(bytes / 1024)} KiB, ${stored}`;
      rows.push(
        row('compose (partition read + compose)', size, figures.compose, kib),
        row('compose + send (Pusher.sendNode)', size, figures.send),
        row('host fetch, 200', size, figures.fetch, `${Math.round(answerBytes / 1024)} KiB as written`),
        row('host fetch, 304', size, figures.unchanged),
        row('host apply (write + parse hook)', size, figures.apply),
      );
      await api.stop();
      client.destroy();
      seeding.destroy();
    }
  } finally {
    rmSync(hostDir, { recursive: true, force: true });
    await environment.stop();
  }
  notes.push(
    'one provider node (module rabbit, amqp) with N consumers’ grants seeded through the store; each run adds one more grant, so the provider is behind, and sends it',
    'requests: DynamoDB requests of the control plane (the fetch’s include the host proof’s key read and replay write); compose + send includes its own partition read',
    `300 is today’s one-item limit (consumersPerNode was 300); a declaration over ${inlineBytes} bytes is kept in parts (lib/server/adapters/dynamodb/declaration-parts.ts)`,
    'the control plane’s DynamoDB client waits up to 120 s a request here (the product’s is 3 s): DynamoDB Local serves a 1 MB page of the 10,000-consumer partition in seconds on a loaded machine',
    `medians of ${Number(process.env.MESH_BENCH_PROVIDER_RUNS ?? 3)} runs on DynamoDB Local (MESH_BENCH_PROVIDER_SIZES, MESH_BENCH_PROVIDER_RUNS)`,
  );
  return [
    {
      title: 'A provider with thousands of consumers: compose + send, and its host’s fetch and apply',
      columns: ['step', 'consumers', 'median ms', 'requests', 'size'],
      rows,
      notes,
    },
  ];
}
