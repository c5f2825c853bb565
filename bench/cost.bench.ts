import { readFileSync } from 'node:fs';
import { functionSpecs } from '../lib/functions.ts';
import type { BenchTable } from './support/table.ts';

/** The price list, kept as data (bench/prices.json) so a new price is a data change. */
type Prices = {
  region: string;
  asOf: string;
  apiGateway: { restRequestsPerMillion: number };
  lambda: { requestsPerMillion: number; arm64GbSecond: number };
  sqs: { fifoRequestsPerMillion: number };
  dynamodb: {
    onDemandWriteRequestUnitsPerMillion: number;
    onDemandReadRequestUnitsPerMillion: number;
    storageGbMonth: number;
    pointInTimeRecoveryGbMonth: number;
  };
  stepFunctions: { expressRequestsPerMillion: number; expressGbSecond: number };
  cloudWatch: {
    logsIngestedGb: number;
    logsStoredGbMonth: number;
    alarmMonth: number;
    customMetricMonth: number;
  };
  xRay: { tracesRecordedPerMillion: number };
};

type Figure = { readonly value: number; readonly source: string };
const assumed = (value: number, why: string): Figure => ({ value, source: `assumption: ${why}` });
const from = (value: number, where: string): Figure => ({ value, source: where });

/**
 * What one node costs in a month, as request counts. Push and queue figures are the push and
 * queue benches' counts (copied here, with the run they come from); figures marked
 * "assumption" are placeholders; the others are read off the code that makes the requests.
 */
export const activity = {
  pollIntervalSeconds: from(30, 'mesh-host run --interval default (lib/host/commands/run.ts)'),
  changesPerNodeMonth: assumed(30, 'one declaration change per node per day'),
  reportsPerChange: from(2, 'mesh-host run reports applying and applied (design brief)'),
  pushesPerMonthFleet: assumed(300, 'operator pushes per month, whole fleet'),
  hostAuthReadUnits: from(2, 'BatchGet of the node key and the enrolment, consistent (credential-reader.ts)'),
  replayGuardWriteUnits: from(1, 'conditional put of each proof id (proof-replay-guard.ts)'),
  declarationReadUnits: assumed(1, 'one consistent read of the sent declaration, ≤ 4 KB'),
  reportConsumeReadUnits: assumed(1, 'newer-report-wins reads the stored report'),
  reportConsumeWriteUnits: assumed(1, 'newer-report-wins writes one item ≤ 1 KB'),
  sqsCallsPerMessage: from(
    0.2,
    'queue bench: consumer on the local event-source loop, 600 reports, receive 10 + batch delete',
  ),
  pushCapacityUnitsPerNode: from(
    7.25,
    'push bench (MESH_BENCH_SIZES=100): named push, 14.5 capacity units over 2 nodes on DynamoDB Local',
  ),
  pushWriteShare: assumed(0.4, 'share of those capacity units that are writes (sent, declaration, mark)'),
  pushSecondsPerFlow: assumed(2, 'Express duration of one push, billed at 64 MB'),
  handlerMs: assumed(40, 'API handler billed duration at 256 MB'),
  authorizerMs: assumed(30, 'host authorizer billed duration at 256 MB (one read, one Ed25519 verify)'),
  consumerMsPerMessage: assumed(20, 'consumer batch of 10 in 200 ms at 256 MB'),
  pushTaskMsPerNode: assumed(100, 'push-send share per node at 256 MB'),
  logKbPerInvocation: assumed(0.6, 'START/END/REPORT lines plus one Powertools line'),
  accessLogKbPerRequest: from(0.4, 'AccessLogFormat.jsonWithStandardFields line'),
  flowLogKbPerNode: assumed(2, 'Step Functions ALL logging with execution data, per node sent'),
  storedKbPerNode: assumed(25, 'inventory items, declaration, reports, identity keys'),
  customMetrics: assumed(5, 'LostMessages and the other Powertools metrics'),
  sqsIdlePollers: from(5, 'Lambda SQS event source: 5 long-polling pollers (20 s) even when idle'),
  xRayReservoirPerSecond: from(1, 'X-Ray default sampling: 1 request/s, then 5%'),
  xRayRate: from(0.05, 'X-Ray default sampling: 1 request/s, then 5%'),
} as const;

const monthSeconds = 30 * 24 * 3600;
const perMillion = (count: number, price: number) => (count / 1e6) * price;

type Line = { readonly item: string; readonly fleet: (nodes: number) => number };

function costLines(prices: Prices, model: typeof activity, functionCount: number): Line[] {
  const v = (figure: Figure) => figure.value;
  const polls = monthSeconds / v(model.pollIntervalSeconds);
  const reports = v(model.changesPerNodeMonth) * v(model.reportsPerChange);
  const hostRequests = polls + reports;
  const gbSeconds = (ms: number, mb = 256) => (ms / 1000) * (mb / 1024);
  const lambdaPerNode = {
    invocations: hostRequests * 2 + reports / 10 + v(model.changesPerNodeMonth),
    gbSeconds:
      hostRequests * (gbSeconds(v(model.handlerMs)) + gbSeconds(v(model.authorizerMs))) +
      reports * gbSeconds(v(model.consumerMsPerMessage)) +
      v(model.changesPerNodeMonth) * gbSeconds(v(model.pushTaskMsPerNode)),
  };
  const readUnits =
    hostRequests * 2 * v(model.hostAuthReadUnits) +
    polls * v(model.declarationReadUnits) +
    reports * v(model.reportConsumeReadUnits) +
    v(model.changesPerNodeMonth) * v(model.pushCapacityUnitsPerNode) * (1 - v(model.pushWriteShare));
  const writeUnits =
    hostRequests * v(model.replayGuardWriteUnits) +
    reports * v(model.reportConsumeWriteUnits) +
    v(model.changesPerNodeMonth) * v(model.pushCapacityUnitsPerNode) * v(model.pushWriteShare);
  const logGb =
    (lambdaPerNode.invocations * v(model.logKbPerInvocation) +
      hostRequests * v(model.accessLogKbPerRequest) +
      v(model.changesPerNodeMonth) * v(model.flowLogKbPerNode)) /
    1024 ** 2;
  const storedGb = v(model.storedKbPerNode) / 1024 ** 2;
  const alarms = 2 + 2 * functionCount;
  const traces = (nodes: number) => {
    const perSecond = (nodes * hostRequests) / monthSeconds;
    const sampled =
      Math.min(perSecond, v(model.xRayReservoirPerSecond)) +
      v(model.xRayRate) * Math.max(0, perSecond - v(model.xRayReservoirPerSecond));
    return sampled * monthSeconds;
  };
  return [
    {
      item: 'API Gateway REST requests',
      fleet: (n) => perMillion(n * hostRequests, prices.apiGateway.restRequestsPerMillion),
    },
    {
      item: 'Lambda requests',
      fleet: (n) => perMillion(n * lambdaPerNode.invocations, prices.lambda.requestsPerMillion),
    },
    {
      item: 'Lambda compute (arm64)',
      fleet: (n) => n * lambdaPerNode.gbSeconds * prices.lambda.arm64GbSecond,
    },
    {
      item: 'SQS FIFO requests',
      fleet: (n) =>
        perMillion(n * reports * (1 + v(model.sqsCallsPerMessage)), prices.sqs.fifoRequestsPerMillion),
    },
    {
      item: 'SQS polling by the event source (idle)',
      fleet: () =>
        perMillion((v(model.sqsIdlePollers) * monthSeconds) / 20, prices.sqs.fifoRequestsPerMillion),
    },
    {
      item: 'DynamoDB reads (on demand)',
      fleet: (n) => perMillion(n * readUnits, prices.dynamodb.onDemandReadRequestUnitsPerMillion),
    },
    {
      item: 'DynamoDB writes (on demand)',
      fleet: (n) => perMillion(n * writeUnits, prices.dynamodb.onDemandWriteRequestUnitsPerMillion),
    },
    {
      item: 'DynamoDB storage + PITR',
      fleet: (n) =>
        n * storedGb * (prices.dynamodb.storageGbMonth + prices.dynamodb.pointInTimeRecoveryGbMonth),
    },
    {
      item: 'Step Functions Express',
      fleet: () =>
        perMillion(v(model.pushesPerMonthFleet), prices.stepFunctions.expressRequestsPerMillion) +
        v(model.pushesPerMonthFleet) *
          gbSeconds(v(model.pushSecondsPerFlow) * 1000, 64) *
          prices.stepFunctions.expressGbSecond,
    },
    {
      item: 'CloudWatch Logs (ingest + 1 month kept)',
      fleet: (n) => n * logGb * (prices.cloudWatch.logsIngestedGb + prices.cloudWatch.logsStoredGbMonth),
    },
    {
      item: 'X-Ray traces (default sampling)',
      fleet: (n) => perMillion(traces(n), prices.xRay.tracesRecordedPerMillion),
    },
    {
      item: `CloudWatch alarms (${alarms}) + custom metrics`,
      fleet: () =>
        alarms * prices.cloudWatch.alarmMonth + v(model.customMetrics) * prices.cloudWatch.customMetricMonth,
    },
  ];
}

const fleets = [1_000, 10_000] as const;

/** Dollars per node per month at 1,000 and 10,000 nodes, from request counts and bench/prices.json. */
export async function run(): Promise<BenchTable[]> {
  const prices = JSON.parse(readFileSync(new URL('./prices.json', import.meta.url), 'utf8')) as Prices;
  const functionCount = functionSpecs.length;
  const table = (model: typeof activity, title: string): BenchTable => {
    const lines = costLines(prices, model, functionCount);
    const perNode = (line: Line, nodes: number) => line.fleet(nodes) / nodes;
    const total = (nodes: number) => lines.reduce((sum, line) => sum + line.fleet(nodes), 0);
    return {
      title,
      columns: [
        'item',
        ...fleets.map((n) => `$/node/month @${n.toLocaleString('en')}`),
        ...fleets.map((n) => `fleet $/month @${n.toLocaleString('en')}`),
      ],
      rows: [
        ...lines.map((line) => [
          line.item,
          ...fleets.map((n) => perNode(line, n).toFixed(4)),
          ...fleets.map((n) => line.fleet(n).toFixed(2)),
        ]),
        ['TOTAL', ...fleets.map((n) => (total(n) / n).toFixed(4)), ...fleets.map((n) => total(n).toFixed(2))],
      ],
    };
  };
  const quiet = { ...activity, pollIntervalSeconds: assumed(300, 'mesh-host run --interval 300') };
  return [
    {
      ...table(activity, `cost: dollars per node per month (${prices.region}, prices as of ${prices.asOf})`),
      notes: [
        'the host poll (GET /hosts/{node}/declaration every 30 s: authorizer + handler + replay-guard write) is most of the bill',
        'push and queue figures come from `npm run bench -- push` (100 nodes) and `-- queue`; figures marked "assumption" are placeholders',
      ],
    },
    table(quiet, 'cost: the same with mesh-host run --interval 300'),
    {
      title: 'cost: the per-node activity model behind the tables',
      columns: ['figure', 'value', 'source'],
      rows: Object.entries(activity).map(([name, figure]) => [name, figure.value, figure.source]),
    },
  ];
}
