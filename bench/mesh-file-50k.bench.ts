import { readFileSync } from 'node:fs';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { functionLimits, invocation } from '../lib/local/aws-quotas.ts';
import { localLambdaContext } from '../lib/local/lambda-context.ts';
import { LocalApplyFlow } from '../lib/local/local-apply-flow.ts';
import { localPartsFor } from '../lib/local/parts.ts';
import { enforcingQuotas, quotaAnswers } from '../lib/local/sdk-quotas.ts';
import { makeDynamoDBClient } from '../lib/server/adapters/aws-clients.ts';
import {
  meshApplyAdvanceHandler,
  meshApplyHandler,
  meshUploadHandler,
} from '../lib/server/api/handlers/mesh-file.ts';
import type { ApplyOutcome } from '../lib/server/core/mesh-file/service.ts';
import { sha256Of } from '../lib/server/core/mesh-file/uploads.ts';
import { steppingFlows } from '../lib/server/flows/stepping-flows.ts';
import { functionSpecs } from '../lib/server/functions/table.ts';
import type { MeshConfig } from '../lib/server/setup/config.ts';
import { benchEnvironment } from './support/environment.ts';
import type { BenchTable } from './support/table.ts';

/**
 * `npm run bench -- mesh-file-50k`: a generated mesh file of 10,000 and 50,000 nodes (a fleet's
 * shape: names of 60 characters, six labels, four modules a node, one relation to a broker;
 * 20.6 MB at 50,000 nodes, the issue’s “about 19 MB”) uploaded in parts and applied as `mesh apply -f` does, each handler
 * in-process on DynamoDB Local and held as Lambda holds it (its payload against 6 MB, its timeout:
 * API Gateway's 29 s for a request, its row's for the job's parts) with every DynamoDB request
 * holding the enforced quotas: the upload's requests, the apply request, then the apply job's parts
 * as the flow runs them. For each request: its body and its event in bytes, its time, and what it
 * read (DynamoDB requests by kind, and items read), to show what a part of the job costs as the
 * mesh grows.
 */
const advanceSeconds =
  functionSpecs.find((spec) => spec.name === 'mesh-apply-advance')?.timeoutSeconds ?? 300;
/** An API Gateway REST event around a body, with headers of the size the CLI sends signed. */
const eventOf = (body: string): APIGatewayProxyEvent =>
  ({
    resource: '/mesh/uploads',
    path: '/mesh/uploads',
    httpMethod: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `AWS4-HMAC-SHA256 Credential=${'A'.repeat(20)}/20261206/eu-west-1/execute-api/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-security-token, Signature=${'0'.repeat(64)}`,
      'x-amz-security-token': 'T'.repeat(1200),
      'x-amz-date': '20261206T000000Z',
      host: 'abcdefghij.execute-api.eu-west-1.amazonaws.com',
    },
    multiValueHeaders: {},
    queryStringParameters: null,
    pathParameters: null,
    requestContext: {
      requestTimeEpoch: Date.now(),
      requestId: 'c6af9ac6-7b61-11e6-9a41-93e8deadbeef',
      identity: {
        userArn: 'arn:aws:sts::123456789012:assumed-role/MeshOperator/someone',
        sourceIp: '192.0.2.1',
      },
    },
    body,
    isBase64Encoded: false,
  }) as unknown as APIGatewayProxyEvent;

/** DynamoDB requests by kind and items read, counted until reset. */
function meter(client: DynamoDBClient) {
  const counts = { requests: new Map<string, number>(), itemsRead: 0, itemsWritten: 0 };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const name = String(context.commandName ?? '?').replace(/Command$/, '');
      counts.requests.set(name, (counts.requests.get(name) ?? 0) + 1);
      const items = (args.input as { TransactItems?: unknown[] }).TransactItems;
      if (items) counts.itemsWritten += items.length;
      const result = await next(args);
      const output = result.output as {
        Count?: number;
        Item?: unknown;
        Responses?: Record<string, unknown[]>;
      };
      if (typeof output.Count === 'number') counts.itemsRead += output.Count;
      else if (output.Item) counts.itemsRead += 1;
      else if (output.Responses && !Array.isArray(output.Responses))
        for (const list of Object.values(output.Responses)) counts.itemsRead += list.length;
      return result;
    },
    { step: 'initialize', name: 'meshFileBenchMeter' },
  );
  return {
    counts,
    take: () => {
      const taken = {
        requests: [...counts.requests].map(([name, n]) => `${name} ${n}`).join(', '),
        scans: counts.requests.get('Scan') ?? 0,
        itemsRead: counts.itemsRead,
        itemsWritten: counts.itemsWritten,
      };
      counts.requests.clear();
      counts.itemsRead = 0;
      counts.itemsWritten = 0;
      return taken;
    },
  };
}

/** Brokers serve this many consumers each. */
const consumersPerBroker = 40;

/** A node name of 60 characters, as a fleet's hostnames often are. */
const fleetName = (kind: string, i: number) =>
  `${kind}-${String(i).padStart(6, '0')}-eu-west-1-production-fleet-example-internal`.slice(0, 60);

const fleetLabels = (i: number, role: string) =>
  `    labels: {role: ${role}-frontend-service, zone: eu-west-1${'abc'[i % 3]}, rack: datacentre-hall-${i % 9}-rack-${String(i % 400).padStart(3, '0')}, team: platform-engineering-squad-${i % 12}, env: production-eu-customer-facing, owner: sre-oncall-rotation-${i % 7}-primary}`;

/** A fleet's mesh file of `nodes` nodes: about 413 bytes a node. */
export function fleetFile(nodes: number): string {
  const brokers = Math.max(1, Math.ceil(nodes / (consumersPerBroker + 1)));
  const lines = ['version: 1', 'nodes:'];
  for (let b = 0; b < brokers; b++)
    lines.push(
      `  ${fleetName('broker', b)}:`,
      fleetLabels(b, 'broker'),
      '    modules:',
      '      base: {}',
      '      rabbit: {provides: amqp}',
      '      metrics: {}',
      '      logs: {}',
    );
  for (let i = 0; i < nodes - brokers; i++)
    lines.push(
      `  ${fleetName('web', i)}:`,
      fleetLabels(i, 'web'),
      '    modules:',
      '      base: {}',
      `      nginx: {consumes: [${fleetName('broker', Math.floor(i / consumersPerBroker))}/rabbit]}`,
      '      metrics: {}',
      '      logs: {}',
    );
  return `${lines.join('\n')}\n`;
}

/** The apply flow's Retry of its Advance task, as its ASL says (lib/server/flows/apply.asl.json). */
const advanceRetry = (
  JSON.parse(readFileSync(steppingFlows.apply.aslPath, 'utf8')) as {
    States: {
      Advance: {
        Retry: Array<{
          ErrorEquals: string[];
          IntervalSeconds: number;
          MaxAttempts: number;
          BackoffRate: number;
          MaxDelaySeconds?: number;
        }>;
      };
    };
  }
).States.Advance.Retry;

/**
 * Runs `attempt` as the apply flow runs its Advance: an error its Retry names is tried again
 * after the Retry's wait (doubling, capped, with full jitter) until its attempts run out.
 */
async function retriedAsTheFlowDoes<T>(
  attempt: () => Promise<T>,
  told: (error: Error, waitSeconds: number) => void,
): Promise<T> {
  const tries = new Map<number, number>();
  for (;;) {
    try {
      return await attempt();
    } catch (thrown) {
      const error = thrown as Error;
      const at = advanceRetry.findIndex((retry) => retry.ErrorEquals.includes(error.name));
      const retry = advanceRetry[at];
      const done = tries.get(at) ?? 0;
      if (!retry || done >= retry.MaxAttempts) throw error;
      tries.set(at, done + 1);
      const ceiling = Math.min(
        retry.IntervalSeconds * retry.BackoffRate ** done,
        retry.MaxDelaySeconds ?? Number.POSITIVE_INFINITY,
      );
      const wait = Math.random() * ceiling;
      told(error, wait);
      await new Promise((resolve) => setTimeout(resolve, wait * 1000));
    }
  }
}

/**
 * One invocation of `fn` with `event`, held as Lambda holds it (payload, concurrency, its row's
 * timeout, or the caller's wait when shorter: API Gateway's 29 s).
 */
const invoked = <T>(fn: string, event: unknown, seconds: number, work: () => Promise<T>) =>
  invocation(fn, work, {
    payload: event,
    timeoutSeconds: Math.min(seconds, functionLimits(fn).timeoutSeconds),
  });

const seconds = (ms: number) => (ms / 1000).toFixed(1);
const mb = (bytes: number) => (bytes / 1e6).toFixed(2);

export type FileFigures = {
  readonly fileBytes: number;
  /** The event Lambda would get for the file sent whole in one request. */
  readonly wholeEventBytes: number;
  /** The largest event of the upload's requests. */
  readonly largestEventBytes: number;
  readonly requests: number;
  readonly jobParts: number;
  readonly mostReadInAPart: number;
  /** Advance calls the apply flow's Retry asked again (StoreUnavailableError, a Lambda timeout). */
  readonly flowRetries: number;
  /** Requests answered `TransactionConflict` while the job ran. */
  readonly conflicts: number;
  readonly seconds: number;
};

/**
 * A fleet file of `size` nodes uploaded in parts and applied on `config`'s tables, each handler
 * held as Lambda holds it; its requests go to `rows` and what they read to `notes`.
 */
export async function applyFleetFile(
  config: MeshConfig,
  size: number,
  rows: Array<Array<string | number>>,
  notes: string[],
  say: (text: string) => void,
): Promise<FileFigures> {
  // DynamoDB Local on a loaded machine answers a transaction late; AWS's own latency is not this
  // bench's subject, so the client waits 30 s where the control plane's waits 3 s.
  const client = enforcingQuotas(makeDynamoDBClient(config, { requestTimeoutMs: 30_000 }));
  const meters = meter(client);
  const parts = localPartsFor(config, { clients: { dynamodb: client } });
  const deps = { ...parts, applyFlow: new LocalApplyFlow(), now: () => new Date() };
  const file = fleetFile(size);
  const fileBytes = Buffer.byteLength(file);
  const inline = eventOf(JSON.stringify({ file }));
  const inlineEvent = Buffer.byteLength(JSON.stringify(inline));
  notes.push(
    `${size} nodes: the file is ${mb(fileBytes)} MB; sent whole, its request body would be ${mb(Buffer.byteLength(inline.body ?? ''))} MB and its event ${mb(inlineEvent)} MB (${inlineEvent > 6 * 1024 * 1024 ? 'over' : 'within'} Lambda's 6 MB; the CLI sends a file in one request up to 4 MiB)`,
  );
  const started = performance.now();
  // The upload, as the CLI sends it.
  const upload = meshUploadHandler(deps);
  let largestBody = 0;
  let largestEvent = 0;
  const post = async (body: unknown) => {
    const event = eventOf(JSON.stringify(body));
    largestBody = Math.max(largestBody, Buffer.byteLength(event.body ?? ''));
    largestEvent = Math.max(largestEvent, Buffer.byteLength(JSON.stringify(event)));
    const answer = await invoked('mesh-upload', event, 29, () =>
      upload(
        event,
        localLambdaContext('mesh-upload', Math.min(29, functionLimits('mesh-upload').timeoutSeconds) * 1000),
      ),
    );
    if (answer.statusCode >= 300) throw new Error(`upload answered ${answer.statusCode}: ${answer.body}`);
    return JSON.parse(answer.body) as { id: string; parts: number; partBytes: number };
  };
  const data = Buffer.from(file);
  const begun = await post({ bytes: data.length, sha256: sha256Of(data) });
  for (let part = 1; part <= begun.parts; part++) {
    const bytes = data.subarray((part - 1) * begun.partBytes, part * begun.partBytes);
    await post({ upload: begun.id, part, data: bytes.toString('base64'), sha256: sha256Of(bytes) });
  }
  const uploaded = performance.now() - started;
  const uploadReads = meters.take();
  rows.push([
    `${size} nodes, upload (${begun.parts + 1} requests)`,
    seconds(uploaded),
    mb(largestBody),
    mb(largestEvent),
    uploadReads.scans,
    uploadReads.itemsRead,
    uploadReads.itemsWritten,
  ]);
  say(
    `${size}: uploaded in ${begun.parts} parts, ${seconds(uploaded)} s, largest event ${mb(largestEvent)} MB`,
  );
  // The apply request, then the job's parts.
  const applyEvent = eventOf(JSON.stringify({ upload: begun.id }));
  let asked = performance.now();
  const answer = await invoked('mesh-apply', applyEvent, 29, () =>
    meshApplyHandler(deps)(applyEvent, localLambdaContext('mesh-apply', 29_000)),
  );
  let took = performance.now() - asked;
  // 202: an uploaded file is handed whole to its job, which checks and plans it
  if (answer.statusCode !== 200 && answer.statusCode !== 202)
    throw new Error(`apply answered ${answer.statusCode}: ${answer.body}`);
  const first = JSON.parse(answer.body) as ApplyOutcome & { job?: { id: string } };
  let mostReadInAPart = 0;
  let flowRetries = 0;
  const conflicts = quotaAnswers.conflicts;
  let jobParts = 0;
  let read = meters.take();
  const line = (what: string) => {
    rows.push([
      `${size} nodes, ${what}`,
      seconds(took),
      mb(Buffer.byteLength(applyEvent.body ?? '')),
      mb(Buffer.byteLength(JSON.stringify(applyEvent))),
      read.scans,
      read.itemsRead,
      read.itemsWritten,
    ]);
    notes.push(`${size} nodes, ${what}: ${read.requests}`);
    say(
      `${size}: ${what}: ${seconds(took)} s, ${read.scans} scans, ${read.itemsRead} items read, ${read.itemsWritten} written`,
    );
  };
  line('apply request');
  const advance = meshApplyAdvanceHandler(deps);
  for (let part = 1; first.job && !first.complete; part++) {
    asked = performance.now();
    const input = { id: first.job.id };
    const step = (await retriedAsTheFlowDoes(
      () =>
        invoked('mesh-apply-advance', input, advanceSeconds, () =>
          advance(input, localLambdaContext('mesh-apply-advance', advanceSeconds * 1000)),
        ),
      (error, wait) => {
        flowRetries += 1;
        say(
          `${size}: the flow retries Advance in ${wait.toFixed(1)} s after ${error.name}: ${error.message.slice(0, 160)}`,
        );
      },
    )) as { finished: boolean; waitSeconds: number };
    took = performance.now() - asked;
    read = meters.take();
    if (step.waitSeconds > 0 && !step.finished) {
      await new Promise((resolve) => setTimeout(resolve, step.waitSeconds * 1000));
      part -= 1;
      continue;
    }
    line(`apply flow, part ${part}`);
    jobParts = part;
    mostReadInAPart = Math.max(mostReadInAPart, read.itemsRead);
    if (step.finished) {
      const job = await parts.applyJobs.read(first.job.id);
      if (job?.state !== 'done') throw new Error(`apply job ended ${JSON.stringify(job?.error)}`);
      break;
    }
  }
  rows.push([
    `${size} nodes, end to end`,
    seconds(performance.now() - started),
    mb(largestBody),
    mb(largestEvent),
    '',
    '',
    '',
  ]);
  client.destroy();
  return {
    fileBytes,
    wholeEventBytes: inlineEvent,
    largestEventBytes: largestEvent,
    requests: begun.parts + 1,
    jobParts,
    mostReadInAPart,
    flowRetries,
    conflicts: quotaAnswers.conflicts - conflicts,
    seconds: (performance.now() - started) / 1000,
  };
}

export async function run(): Promise<BenchTable[]> {
  const sizes = (process.env.MESH_BENCH_FILE_SIZES ?? '10000,50000').split(',').map(Number);
  const rows: Array<Array<string | number>> = [];
  const notes: string[] = [];
  const say = (text: string) => process.stderr.write(`${text}\n`);
  for (const size of sizes) {
    const environment = await benchEnvironment();
    try {
      const config = await environment.provision(`file-${size}-${Math.random().toString(36).slice(2, 8)}`);
      await applyFleetFile(config, size, rows, notes, say);
    } catch (error) {
      say(`${size}: failed: ${(error as Error).message.slice(0, 300)}`);
      notes.push(`${size} nodes: failed: ${(error as Error).message.slice(0, 200)}`);
    } finally {
      await environment.stop();
    }
  }
  return [
    {
      title: 'A mesh file uploaded in parts and applied (each handler in-process on DynamoDB Local)',
      columns: [
        'what',
        'seconds',
        'largest body (MB)',
        'largest event (MB)',
        'scans',
        'items read',
        'items written',
      ],
      rows,
      notes,
    },
  ];
}
