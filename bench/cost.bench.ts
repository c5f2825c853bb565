import { readFileSync } from 'node:fs';
import { defaultSafetyIntervalMs } from '../lib/clients/host/agent/run-loop.ts';
import { functionSpecs } from '../lib/server/functions/table.ts';
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
  iotCore: {
    connectionMinutesPerMillion: number;
    messagesPerMillion: number;
    rulesTriggeredPerMillion: number;
    actionsAppliedPerMillion: number;
  };
};

type Figure = { readonly value: number; readonly source: string };
const assumed = (value: number, why: string): Figure => ({ value, source: `assumption: ${why}` });
const from = (value: number, where: string): Figure => ({ value, source: where });

const monthSeconds = 30 * 24 * 3600;

/**
 * What one node costs in a month, as request counts. The fleet's activity is an assumption
 * stated here: a 30-day month, one push an hour touching 10% of the nodes, state reports on change only. Push
 * and queue figures are the push and queue benches' counts; figures marked "assumption" are
 * placeholders; the others are read off the code that makes the requests.
 */
export const activity = {
  pushesPerMonthFleet: from(720, 'assumption: one push an hour, 30-day month'),
  changesPerNodeMonth: from(72, 'assumption: each push touches 10% of the nodes: 720 × 0.1'),
  reportsPerChange: from(2, 'mesh-host run reports applying and applied (docs/host-agent.md)'),
  pollIntervalSeconds: from(30, 'mesh-host run --interval default (lib/clients/host/commands/run.ts)'),
  heartbeatSeconds: from(180, 'mesh-host run --heartbeat default: sent while polling only'),
  safetyFetchSeconds: from(defaultSafetyIntervalMs / 1000, 'mesh-host run --safety-interval default'),
  connectsPerNodeMonth: from(
    30,
    'the authorizer disconnects after 24 h (connectionSeconds); the host connects again',
  ),
  messagesPerSignal: from(
    4,
    'IoT meters the data-plane Publish, RETAINED, the delivery, and the host PUBACK',
  ),
  messagesPerConnect: from(6, 'CONNECT, SUBSCRIBE, the retained signal and its PUBACK, two lifecycle events'),
  lifecycleEventsPerConnect: from(
    2,
    'connected and disconnected: one rule, one Lambda action, one presence write each',
  ),
  hostAuthReadUnits: from(2, 'BatchGet of the node key and the enrolment, consistent (credential-reader.ts)'),
  replayGuardWriteUnits: from(1, 'conditional put of each proof id (proof-replay-guard.ts)'),
  presenceWriteUnits: from(
    4,
    'a transaction: ConditionCheck of the node + the presence update, 2 units each',
  ),
  declarationReadUnits: assumed(1, 'one consistent read of the sent declaration, ≤ 4 KB'),
  reportConsumeReadUnits: from(0, 'the report transaction reads nothing: its checks are conditions'),
  reportConsumeWriteUnits: from(
    6,
    'a transaction: ConditionCheck of the node and of its delivery + the report update, 2 units each (report-store.ts)',
  ),
  sqsCallsPerMessage: from(
    0.2,
    'queue bench: consumer on the local event-source loop, receive 10 + batch delete',
  ),
  pushCapacityUnitsPerNode: from(7.25, 'push bench (MESH_BENCH_SIZES=100): 14.5 capacity units over 2 nodes'),
  pushWriteShare: assumed(0.4, 'share of those capacity units that are writes (sent, declaration, mark)'),
  pushSecondsPerFlow: assumed(5, 'Express duration of one push touching 10% of the nodes, billed at 64 MB'),
  handlerMs: assumed(40, 'API handler billed duration at 256 MB'),
  authorizerMs: assumed(
    30,
    'host or broker authorizer billed duration at 256 MB (one read, one Ed25519 verify)',
  ),
  presenceMs: assumed(20, 'presence function billed duration at 256 MB (one transaction)'),
  consumerMsPerMessage: assumed(20, 'consumer batch of 10 in 200 ms at 256 MB'),
  pushTaskMsPerNode: assumed(100, 'push-send share per node at 256 MB'),
  publishMsPerSignal: assumed(25, 'one IoT data-plane Publish from a push task at 256 MB'),
  logKbPerInvocation: assumed(0.6, 'START/END/REPORT lines plus one Powertools line'),
  accessLogKbPerRequest: from(0.4, 'AccessLogFormat.jsonWithStandardFields line'),
  flowLogKbPerNode: assumed(2, 'Step Functions ALL logging with execution data, per node sent'),
  storedKbPerNode: assumed(25, 'inventory items, declaration, reports, identity keys, presence'),
  customMetrics: assumed(5, 'LostMessages, SignalsNotPublished and the other Powertools metrics'),
  sqsIdlePollers: from(5, 'Lambda SQS event source: 5 long-polling pollers (20 s) even when idle'),
  xRayReservoirPerSecond: from(1, 'X-Ray default sampling: 1 request/s, then 5%'),
  xRayRate: from(0.05, 'X-Ray default sampling: 1 request/s, then 5%'),
} as const;

type Mode = 'poll' | 'signal';
type Line = { readonly item: string; readonly fleet: (nodes: number, mode: Mode) => number };
const perMillion = (count: number, price: number) => (count / 1e6) * price;
const gbSeconds = (ms: number, mb = 256) => (ms / 1000) * (mb / 1024);

/** One node's month in requests and seconds, by how its host learns of a change. */
function perNode(model: typeof activity, mode: Mode) {
  const v = (figure: Figure) => figure.value;
  const changes = v(model.changesPerNodeMonth);
  const reports = changes * v(model.reportsPerChange);
  const polling = mode === 'poll';
  const connects = polling ? 0 : v(model.connectsPerNodeMonth);
  const fetches = polling
    ? monthSeconds / v(model.pollIntervalSeconds)
    : changes + monthSeconds / v(model.safetyFetchSeconds) + connects;
  const heartbeats = polling ? monthSeconds / v(model.heartbeatSeconds) : 0;
  const queued = reports + heartbeats;
  const hostRequests = fetches + queued;
  const events = connects * v(model.lifecycleEventsPerConnect);
  return {
    changes,
    fetches,
    heartbeats,
    queued,
    hostRequests,
    connects,
    events,
    connectedMinutes: polling ? 0 : monthSeconds / 60,
    messages: polling ? 0 : changes * v(model.messagesPerSignal) + connects * v(model.messagesPerConnect),
    invocations: hostRequests * 2 + queued / 10 + changes + connects + events,
    gbSeconds:
      hostRequests * (gbSeconds(v(model.handlerMs)) + gbSeconds(v(model.authorizerMs))) +
      queued * gbSeconds(v(model.consumerMsPerMessage)) +
      changes * gbSeconds(v(model.pushTaskMsPerNode) + (polling ? 0 : v(model.publishMsPerSignal))) +
      connects * gbSeconds(v(model.authorizerMs)) +
      events * gbSeconds(v(model.presenceMs)),
    readUnits:
      (hostRequests * 2 + connects) * v(model.hostAuthReadUnits) +
      fetches * v(model.declarationReadUnits) +
      queued * v(model.reportConsumeReadUnits) +
      changes * v(model.pushCapacityUnitsPerNode) * (1 - v(model.pushWriteShare)),
    writeUnits:
      (hostRequests + connects) * v(model.replayGuardWriteUnits) +
      queued * v(model.reportConsumeWriteUnits) +
      events * v(model.presenceWriteUnits) +
      changes * v(model.pushCapacityUnitsPerNode) * v(model.pushWriteShare),
  };
}

function costLines(prices: Prices, model: typeof activity, functionCount: number): Line[] {
  const v = (figure: Figure) => figure.value;
  const node = { poll: perNode(model, 'poll'), signal: perNode(model, 'signal') };
  const each =
    (count: (n: ReturnType<typeof perNode>) => number, price: number) => (nodes: number, mode: Mode) =>
      perMillion(nodes * count(node[mode]), price);
  const logGb = (mode: Mode) =>
    (node[mode].invocations * v(model.logKbPerInvocation) +
      node[mode].hostRequests * v(model.accessLogKbPerRequest) +
      node[mode].changes * v(model.flowLogKbPerNode)) /
    1024 ** 2;
  const alarms = 3 + 2 * functionCount;
  const traces = (nodes: number, mode: Mode) => {
    const perSecond = (nodes * node[mode].hostRequests) / monthSeconds;
    const sampled =
      Math.min(perSecond, v(model.xRayReservoirPerSecond)) +
      v(model.xRayRate) * Math.max(0, perSecond - v(model.xRayReservoirPerSecond));
    return sampled * monthSeconds;
  };
  const { iotCore } = prices;
  return [
    {
      item: 'API Gateway REST requests (host)',
      fleet: each((n) => n.hostRequests, prices.apiGateway.restRequestsPerMillion),
    },
    {
      item: '  of which heartbeats',
      fleet: each((n) => n.heartbeats, prices.apiGateway.restRequestsPerMillion),
    },
    { item: 'Lambda requests', fleet: each((n) => n.invocations, prices.lambda.requestsPerMillion) },
    {
      item: 'Lambda compute (arm64)',
      fleet: (nodes, mode) => nodes * node[mode].gbSeconds * prices.lambda.arm64GbSecond,
    },
    {
      item: 'SQS FIFO requests (reports, heartbeats)',
      fleet: each((n) => n.queued * (1 + v(model.sqsCallsPerMessage)), prices.sqs.fifoRequestsPerMillion),
    },
    {
      item: 'SQS polling by the event source (idle)',
      fleet: () =>
        perMillion((v(model.sqsIdlePollers) * monthSeconds) / 20, prices.sqs.fifoRequestsPerMillion),
    },
    {
      item: 'DynamoDB reads (on demand)',
      fleet: each((n) => n.readUnits, prices.dynamodb.onDemandReadRequestUnitsPerMillion),
    },
    {
      item: 'DynamoDB writes (on demand)',
      fleet: each((n) => n.writeUnits, prices.dynamodb.onDemandWriteRequestUnitsPerMillion),
    },
    {
      item: 'DynamoDB storage + PITR',
      fleet: (nodes) =>
        (nodes *
          v(model.storedKbPerNode) *
          (prices.dynamodb.storageGbMonth + prices.dynamodb.pointInTimeRecoveryGbMonth)) /
        1024 ** 2,
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
      item: 'IoT Core connectivity',
      fleet: each((n) => n.connectedMinutes, iotCore.connectionMinutesPerMillion),
    },
    { item: 'IoT Core messages', fleet: each((n) => n.messages, iotCore.messagesPerMillion) },
    {
      item: 'IoT Core rules (lifecycle → presence)',
      fleet: each((n) => n.events, iotCore.rulesTriggeredPerMillion + iotCore.actionsAppliedPerMillion),
    },
    {
      item: 'CloudWatch Logs (ingest + 1 month kept)',
      fleet: (nodes, mode) =>
        nodes * logGb(mode) * (prices.cloudWatch.logsIngestedGb + prices.cloudWatch.logsStoredGbMonth),
    },
    {
      item: 'X-Ray traces (default sampling)',
      fleet: (nodes, mode) => perMillion(traces(nodes, mode), prices.xRay.tracesRecordedPerMillion),
    },
    {
      item: `CloudWatch alarms (${alarms}) + custom metrics`,
      fleet: () =>
        alarms * prices.cloudWatch.alarmMonth + v(model.customMetrics) * prices.cloudWatch.customMetricMonth,
    },
  ];
}

const fleets = [1_000, 10_000] as const;
const modes: readonly Mode[] = ['poll', 'signal'];
const label = { poll: 'poll 30 s', signal: 'signal' } as const;

/** Dollars per node per month at 1,000 and 10,000 nodes, today's 30 s poll beside the signal, from bench/prices.json. */
export async function run(): Promise<BenchTable[]> {
  const prices = JSON.parse(readFileSync(new URL('./prices.json', import.meta.url), 'utf8')) as Prices;
  const lines = costLines(prices, activity, functionSpecs.length);
  const summed = (nodes: number, mode: Mode) =>
    lines
      .filter((line) => !line.item.startsWith('  '))
      .reduce((sum, line) => sum + line.fleet(nodes, mode), 0);
  const columns = fleets.flatMap((n) => modes.map((mode) => ({ n, mode })));
  const heading = ({ n, mode }: { n: number; mode: Mode }) => `${label[mode]} @${n.toLocaleString('en')}`;
  const counts = { poll: perNode(activity, 'poll'), signal: perNode(activity, 'signal') };
  return [
    {
      title: `cost: dollars per node per month, today's poll beside the signal (${prices.region}, prices as of ${prices.asOf})`,
      columns: ['item', ...columns.map(heading)],
      rows: [
        ...lines.map((line) => [
          line.item,
          ...columns.map(({ n, mode }) => (line.fleet(n, mode) / n).toFixed(4)),
        ]),
        ['TOTAL $/node/month', ...columns.map(({ n, mode }) => (summed(n, mode) / n).toFixed(4))],
        ['TOTAL fleet $/month', ...columns.map(({ n, mode }) => summed(n, mode).toFixed(2))],
      ],
      notes: [
        'activity (assumed): a 30-day month, one push an hour touching 10% of the nodes (72 changes per node), state reports on change only',
        `per node-month: poll ${counts.poll.fetches.toFixed(0)} fetches + ${counts.poll.heartbeats.toFixed(0)} heartbeats; signal ${counts.signal.fetches.toFixed(0)} fetches (72 on a signal, 120 safety, 30 on reconnect), no heartbeat`,
        'goal: ≤ $0.02 per node-month at 10,000 nodes on the signal',
        'push and queue figures come from `npm run bench -- push` (100 nodes) and `-- queue`; figures marked "assumption" are placeholders',
      ],
    },
    {
      title: 'cost: the per-node activity model behind the table',
      columns: ['figure', 'value', 'source'],
      rows: Object.entries(activity).map(([name, figure]) => [name, figure.value, figure.source]),
    },
  ];
}
