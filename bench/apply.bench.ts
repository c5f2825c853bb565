import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { localLambdaContext } from '../lib/local/lambda-context.ts';
import { LocalApplyFlow } from '../lib/local/local-apply-flow.ts';
import { localPartsFor } from '../lib/local/parts.ts';
import { makeDynamoDBClient } from '../lib/server/adapters/aws-clients.ts';
import { documentClient } from '../lib/server/adapters/dynamodb/requests.ts';
import { DynamoDBLiveMeshReader } from '../lib/server/adapters/mesh-file/live-mesh-reader.ts';
import { DynamoDBDescribedRevisions } from '../lib/server/adapters/mesh-file/mesh-file-described.ts';
import { DynamoDBMeshFileWriter } from '../lib/server/adapters/mesh-file/mesh-file-writer.ts';
import { meshApplyAdvanceHandler, meshApplyHandler } from '../lib/server/api/handlers/mesh-file.ts';
import { localActor } from '../lib/server/core/audit/record.ts';
import { type ApplyOutcome, MeshFileService } from '../lib/server/core/mesh-file/service.ts';
import { functionSpecs } from '../lib/server/functions/table.ts';
import type { MeshConfig } from '../lib/server/setup/config.ts';
import { type BenchEnvironment, benchEnvironment } from './support/environment.ts';
import { median } from './support/stats.ts';
import type { BenchTable } from './support/table.ts';

/** The apply flow's Task has the time its function is given (lib/server/functions/mesh.ts). */
const advanceSeconds =
  functionSpecs.find((spec) => spec.name === 'mesh-apply-advance')?.timeoutSeconds ?? 300;
/**
 * `npm run bench -- apply`: a generated mesh applied from one file, against the same mesh built
 * one call per fact, and an unchanged file applied again. Each node holds three modules and its
 * `web` consumes one provider; one provider node per 100 consumers (under the 300 limit).
 */
const consumersPerProvider = 100;

export function generatedFile(nodes: number): string {
  const providers = Math.max(1, Math.ceil(nodes / (consumersPerProvider + 1)));
  const lines = ['version: 1', 'nodes:'];
  const providerName = (i: number) => `broker-${String(i).padStart(4, '0')}`;
  for (let p = 0; p < providers; p++)
    lines.push(
      `  ${providerName(p)}:`,
      '    labels: {role: broker}',
      '    modules:',
      '      base: {}',
      '      rabbit: {provides: amqp}',
      '      metrics: {}',
    );
  for (let i = 0; i < nodes - providers; i++)
    lines.push(
      `  web-${String(i).padStart(5, '0')}:`,
      '    labels: {role: web}',
      '    modules:',
      '      base: {}',
      `      nginx: {consumes: [${providerName(Math.floor(i / consumersPerProvider))}/rabbit]}`,
      '      metrics: {}',
    );
  return `${lines.join('\n')}\n`;
}

/** Counts every DynamoDB request and every item a transaction writes. */
function meter(client: DynamoDBClient) {
  const counts = { requests: 0, items: 0, byCommand: new Map<string, { requests: number; ms: number }>() };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      counts.requests += 1;
      const items = (args.input as { TransactItems?: unknown[] }).TransactItems;
      const input = args.input as { Item?: unknown; UpdateExpression?: unknown };
      if (items) counts.items += items.length;
      else if (input.Item || input.UpdateExpression) counts.items += 1;
      const name = String(context.commandName ?? '?');
      const started = performance.now();
      try {
        return await next(args);
      } finally {
        const seen = counts.byCommand.get(name) ?? { requests: 0, ms: 0 };
        seen.requests += 1;
        seen.ms += performance.now() - started;
        counts.byCommand.set(name, seen);
      }
    },
    { step: 'initialize', name: 'meshApplyBenchMeter' },
  );
  return counts;
}

/** One apply request's time, and the parts of it spent reading the mesh and writing; the rest is the check, the plan and the answer. */
type RequestTime = { ms: number; read: number; write: number };
type Measured = {
  ms: number;
  requests: number;
  items: number;
  parts: number;
  /** DynamoDB requests by command: how many, and their time summed (requests in flight at once overlap). */
  commands?: string;
  slowest?: RequestTime;
  each?: RequestTime[];
};

/** Applies a file as `mesh apply` does: requests of at most API Gateway's 29 s until complete. */
async function applyFile(
  bed: Bed,
  file: string,
  lanes?: number,
  options: {
    readonly recheck?: boolean;
    /** Plans without the revision the last apply's file describes: every request checks the file, as before it was kept. */
    readonly forget?: boolean;
  } = {},
): Promise<Measured> {
  const { config, client, counts } = bed;
  const before = { ...counts };
  counts.byCommand.clear();
  const parts = localPartsFor(config, { clients: { dynamodb: client } });
  const table = { client: documentClient(client), tableName: config.inventoryTable };
  // The reader and the writer timed, to say where each request's time goes.
  const timing = { read: 0, write: 0 };
  const reader = new DynamoDBLiveMeshReader(table);
  const writer = new DynamoDBMeshFileWriter({
    ...table,
    audit: parts.auditTrail,
    ...(lanes === undefined ? {} : { lanes }),
  });
  const timed = <T>(part: 'read' | 'write', work: () => Promise<T>) => {
    const started = performance.now();
    return work().finally(() => {
      timing[part] += performance.now() - started;
    });
  };
  const read = options.forget
    ? async () => ({ ...(await reader.read()), described: undefined })
    : () => reader.read();
  const deps = {
    meshFiles: new MeshFileService({
      reader: { read: () => timed('read', read) },
      writer: { write: (...args) => timed('write', () => writer.write(...args)) },
      removals: parts.meshService,
      described: new DynamoDBDescribedRevisions(table),
    }),
    applyJobs: parts.applyJobs,
    applyFlow: new LocalApplyFlow(),
    now: () => new Date(),
    log: parts.log,
  };
  const handler = meshApplyHandler(deps);
  // What the request has no time for goes on as a job: its parts are advanced here as the apply
  // flow would, one after the other, each with the advance function's own time.
  const advance = meshApplyAdvanceHandler(deps);
  let job: string | undefined;
  const started = performance.now();
  const each: RequestTime[] = [];
  let requests = 0;
  // Answers of "try again" in a row: a store that keeps saying so ends the run, as an operator would stop.
  let unavailable = 0;
  for (;;) {
    requests += 1;
    // A comment that differs each request makes another text: checked again, as before the check was kept.
    const sent = options.recheck ? `${file}# request ${requests}\n` : file;
    const event = {
      headers: {},
      body: JSON.stringify({ file: sent }),
      requestContext: { requestTimeEpoch: Date.now() },
    } as unknown as APIGatewayProxyEvent;
    timing.read = 0;
    timing.write = 0;
    const asked = performance.now();
    if (job) {
      let step: { finished: boolean };
      try {
        step = (await advance(
          { id: job },
          localLambdaContext('mesh-apply-advance', advanceSeconds * 1000),
        )) as { finished: boolean };
      } catch (error) {
        // The store away is thrown for the flow's Retry (lib/server/flows/apply.asl.json), which takes the part again.
        if ((error as Error).name !== 'StoreUnavailableError' || ++unavailable >= 5) throw error;
        each.push({ ms: performance.now() - asked, read: timing.read, write: timing.write });
        process.stderr.write(
          `apply part ${requests}: the store did not answer, taken again as the flow would\n`,
        );
        continue;
      }
      unavailable = 0;
      each.push({ ms: performance.now() - asked, read: timing.read, write: timing.write });
      if (!step.finished) continue;
      const ended = await parts.applyJobs.read(job);
      if (ended?.state !== 'done') throw new Error(`apply job ${job} ended ${JSON.stringify(ended?.error)}`);
      break;
    }
    const answer = await handler(event, localLambdaContext('mesh-apply', 29_000));
    each.push({ ms: performance.now() - asked, read: timing.read, write: timing.write });
    if (answer.statusCode === 503 && ++unavailable < 5) {
      // The store said "try again" (a request past the client's timeout on a loaded emulator): as mesh apply would be run again.
      process.stderr.write(`apply request ${requests}: 503, asking again\n`);
      continue;
    }
    if (answer.statusCode !== 200) throw new Error(`apply answered ${answer.statusCode}: ${answer.body}`);
    unavailable = 0;
    const outcome = JSON.parse(answer.body) as ApplyOutcome & { job?: { id: string } };
    if (outcome.complete) break;
    job = outcome.job?.id;
  }
  const slowest = each.reduce((a, b) => (b.ms > a.ms ? b : a));
  return {
    ms: performance.now() - started,
    requests: counts.requests - before.requests,
    items: counts.items - before.items,
    parts: requests,
    commands: [...counts.byCommand]
      .map(([name, { requests, ms }]) => `${name.replace(/Command$/, '')} ${requests} in ${seconds(ms)} s`)
      .join(', '),
    slowest,
    each,
  };
}

/** The same mesh, one operator call per fact, in order: what building it without a file takes. */
async function perFact(bed: Bed, nodes: number): Promise<Measured> {
  const { config, client, counts } = bed;
  const { meshService } = localPartsFor(config, { clients: { dynamodb: client } });
  const providers = Math.max(1, Math.ceil(nodes / (consumersPerProvider + 1)));
  const started = performance.now();
  let calls = 0;
  const providerName = (i: number) => `broker-${String(i).padStart(4, '0')}`;
  for (let p = 0; p < providers; p++) {
    const node = providerName(p);
    await meshService.addNode(node, { role: 'broker' }, localActor());
    await meshService.assign(node, 'base', null, localActor());
    await meshService.assign(node, 'rabbit', 'amqp', localActor());
    await meshService.assign(node, 'metrics', null, localActor());
    calls += 4;
  }
  for (let i = 0; i < nodes - providers; i++) {
    const node = `web-${String(i).padStart(5, '0')}`;
    await meshService.addNode(node, { role: 'web' }, localActor());
    await meshService.assign(node, 'base', null, localActor());
    await meshService.assign(node, 'nginx', null, localActor());
    await meshService.assign(node, 'metrics', null, localActor());
    await meshService.consume(
      { node, module: 'nginx' },
      { node: providerName(Math.floor(i / consumersPerProvider)), module: 'rabbit' },
      localActor(),
    );
    calls += 5;
  }
  return { ms: performance.now() - started, requests: counts.requests, items: counts.items, parts: calls };
}

type Bed = { config: MeshConfig; client: DynamoDBClient; counts: ReturnType<typeof meter> };

async function fresh(environment: BenchEnvironment, label: string): Promise<Bed> {
  const config = await environment.provision(`apply-${label}-${Math.random().toString(36).slice(2, 8)}`);
  const client = makeDynamoDBClient(config);
  return { config, client, counts: meter(client) };
}

const seconds = (ms: number) => (ms / 1000).toFixed(1);

export async function run(): Promise<BenchTable[]> {
  let environment = await benchEnvironment();
  // Every measure on a DynamoDB Local of its own: one that holds another mesh and its stream
  // slows each write of the next (the one-lane apply of 1,000 nodes took 741.5 s after the
  // per-fact loop's mesh, its transactions 5.7 s each; bench/scale.bench.ts saw 25 items a second
  // against 2,300).
  const own = async (label: string) => {
    await environment.stop();
    environment = await benchEnvironment();
    return fresh(environment, label);
  };
  const rows: Array<Array<string | number>> = [];
  const notes: string[] = [];
  const progress = (text: string) => process.stderr.write(`${text}\n`);
  try {
    // MESH_BENCH_APPLY_SIZES=200,1000 tries it smaller; the goals are at 1,000 and 10,000.
    const sizes = (process.env.MESH_BENCH_APPLY_SIZES ?? '1000,10000').split(',').map(Number);
    // Runs at the smallest size, for a median; one at the larger sizes, which take minutes.
    const runs = Number(process.env.MESH_BENCH_APPLY_RUNS ?? 3);
    const smallest = sizes[0] ?? 1_000;

    // MESH_BENCH_APPLY_PER_FACT=0 leaves out the loop (minutes), to measure the apply alone.
    const bed = await own('perfact');
    const skip = process.env.MESH_BENCH_APPLY_PER_FACT === '0';
    const loop = skip ? { ms: 0, requests: 0, items: 0, parts: 0 } : await perFact(bed, smallest);
    bed.client.destroy();
    if (!skip) {
      progress(
        `one call per fact, ${smallest} nodes: ${seconds(loop.ms)} s, ${loop.requests} requests, ${loop.items} items`,
      );
      rows.push([
        `${smallest} nodes, one call per fact`,
        seconds(loop.ms),
        loop.requests,
        loop.items,
        loop.parts,
        '',
        1,
      ]);
    }

    // The same apply with one transaction in flight at a time: what the lanes bring.
    if (process.env.MESH_BENCH_APPLY_ONE_LANE !== '0') {
      const bed = await own('onelane');
      const one = await applyFile(bed, generatedFile(smallest), 1);
      bed.client.destroy();
      progress(
        `apply ${smallest}, one lane: ${seconds(one.ms)} s, ${one.requests} requests, ${one.items} items`,
      );
      progress(`  apply ${smallest}, one lane, requests: ${one.commands}`);
      rows.push([
        `${smallest} nodes, mesh apply -f, one transaction at a time`,
        seconds(one.ms),
        one.requests,
        one.items,
        one.parts,
        seconds(one.slowest?.ms ?? 0),
        1,
      ]);
    }

    let fileAtSmallest = 0;
    for (const size of sizes) {
      const file = generatedFile(size);
      const applied: Measured[] = [];
      const reapplied: Measured[] = [];
      const rechecked: Measured[] = [];
      for (let at = 0; at < (size === smallest ? runs : 1); at++) {
        const bed = await own(`${size}`);
        let a: Measured;
        let r: Measured;
        let c: Measured;
        try {
          a = await applyFile(bed, file);
          // Each re-apply on a service of its own (a cold Lambda, a restarted runtime): no check kept in memory.
          r = await applyFile(bed, file);
          c = await applyFile(bed, file, undefined, { forget: true });
        } catch (error) {
          // A request past its 29 s (a 500 from the runtime's timeout) is a figure too: say so, go on.
          progress(`apply ${size}: failed: ${(error as Error).message.slice(0, 200)}`);
          notes.push(`${size} nodes: an apply request failed: ${(error as Error).message.slice(0, 120)}`);
          break;
        } finally {
          bed.client.destroy();
        }
        applied.push(a);
        reapplied.push(r);
        rechecked.push(c);
        progress(
          `apply ${size}: ${seconds(a.ms)} s, ${a.requests} requests, ${a.items} items, ${a.parts} parts, slowest request ${seconds(a.slowest?.ms ?? 0)} s; re-apply ${seconds(r.ms)} s, ${r.items} items; re-apply checking the file ${seconds(c.ms)} s, ${c.items} items`,
        );
        progress(`  apply ${size} requests: ${a.commands}; re-apply: ${r.commands}`);
        const split = (m: Measured) =>
          (m.each ?? [])
            .map(
              (q) =>
                `${seconds(q.ms)} = ${seconds(q.read)} + ${seconds(q.ms - q.read - q.write)} + ${seconds(q.write)}`,
            )
            .join('; ');
        notes.push(
          `${size} nodes, re-apply (whole = read + check, plan and answer + write): the file checked ${split(c)}; at the revision it describes ${split(r)}`,
        );
        notes.push(
          `${size} nodes, the apply's DynamoDB requests (time summed over those in flight at once): ${a.commands}`,
        );
      }
      if (applied.length === 0) continue;
      const mid = (list: Measured[], pick: (m: Measured) => number) => median(list.map(pick));
      if (size === smallest) fileAtSmallest = mid(applied, (m) => m.ms);
      for (const [what, list] of [
        ['mesh apply -f', applied],
        ['re-apply unchanged, the file checked (as before)', rechecked],
        ['re-apply unchanged, at the revision its file describes', reapplied],
      ] as const)
        rows.push([
          `${size} nodes, ${what}`,
          seconds(mid(list, (m) => m.ms)),
          mid(list, (m) => m.requests),
          mid(list, (m) => m.items),
          mid(list, (m) => m.parts),
          seconds(Math.max(...list.map((m) => m.slowest?.ms ?? 0))),
          list.length,
        ]);
      const last = applied[applied.length - 1];
      if (last?.each)
        notes.push(
          `${size} nodes, each request of the last apply (seconds: whole = read + check, plan and answer + write): ${last.each
            .map(
              (r) =>
                `${seconds(r.ms)} = ${seconds(r.read)} + ${seconds(r.ms - r.read - r.write)} + ${seconds(r.write)}`,
            )
            .join('; ')}`,
        );
    }
    // The largest size again with the file checked on every request (each sent with another comment): what keeping the check brings.
    const largest = sizes[sizes.length - 1] ?? smallest;
    if (process.env.MESH_BENCH_APPLY_RECHECK !== '0') {
      const bed = await own('recheck');
      try {
        const again = await applyFile(bed, generatedFile(largest), undefined, { recheck: true });
        progress(
          `apply ${largest}, checked every request: ${seconds(again.ms)} s, ${again.parts} parts, slowest request ${seconds(again.slowest?.ms ?? 0)} s`,
        );
        rows.push([
          `${largest} nodes, mesh apply -f, the file checked again on every request`,
          seconds(again.ms),
          again.requests,
          again.items,
          again.parts,
          seconds(again.slowest?.ms ?? 0),
          1,
        ]);
        notes.push(
          `${largest} nodes checked every request, each request (seconds: whole = read + check, plan and answer + write): ${(
            again.each ?? []
          )
            .map(
              (r) =>
                `${seconds(r.ms)} = ${seconds(r.read)} + ${seconds(r.ms - r.read - r.write)} + ${seconds(r.write)}`,
            )
            .join('; ')}`,
        );
      } catch (error) {
        progress(
          `apply ${largest}, checked every request: failed: ${(error as Error).message.slice(0, 200)}`,
        );
        notes.push(
          `${largest} nodes checked every request: a request failed: ${(error as Error).message.slice(0, 120)}`,
        );
      } finally {
        bed.client.destroy();
      }
    }
    if (!skip)
      notes.push(
        `one call per fact / apply at ${smallest} nodes: ${(loop.ms / fileAtSmallest).toFixed(1)}× (goal ≥ 20× at 1,000)`,
      );
    notes.push(
      'calls per fact are in-process MeshService calls: no HTTP, no process start (the CLI adds 0.38 s each)',
      'apply: the mesh-apply handler in-process, each request held to 29 s as on API Gateway; four transactions in flight over disjoint items (one at a time in its own row)',
      'parts: apply requests (a request ends when its time is up; the next plans the rest), or calls per fact',
    );
  } finally {
    await environment.stop();
  }
  return [
    {
      title:
        'mesh apply: a generated mesh (3 modules a node, 1 relation a node, 1 provider per 100 consumers)',
      columns: [
        'what',
        'seconds (median)',
        'DynamoDB requests',
        'items written',
        'parts',
        'slowest request (s)',
        'runs',
      ],
      rows,
      notes,
    },
  ];
}
