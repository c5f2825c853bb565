import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import {
  makeDynamoDBClient,
  makeEventBridgeClient,
  makeIotDataClient,
  makePushRunClient,
  makeSFNClient,
  makeSQSClient,
} from '../adapters/aws-clients.ts';
import { DynamoDBBuildStore } from '../adapters/control/build-store.ts';
import { SqsControlSender } from '../adapters/control/control-sender.ts';
import { SqsDeadLetterCounter } from '../adapters/control/dead-letter-counter.ts';
import { DynamoDBDeadLetterLog } from '../adapters/control/dead-letter-log.ts';
import { LostMessageMetrics } from '../adapters/control/lost-message-metrics.ts';
import { SqsQueueSettlement } from '../adapters/control/queue-settlement.ts';
import { DynamoDBReportStore } from '../adapters/control/report-store.ts';
import { CountedMetric } from '../adapters/counted-metric.ts';
import { documentClient } from '../adapters/dynamodb/requests.ts';
import { DynamoDBDisenrolment } from '../adapters/enrolment/disenrolment.ts';
import { DynamoDBKeyRotation } from '../adapters/enrolment/key-rotation.ts';
import { DynamoDBNodeKeyStore } from '../adapters/enrolment/node-key-store.ts';
import { DynamoDBTokenStore } from '../adapters/enrolment/token-store.ts';
import { EventBridgeEventSink } from '../adapters/events/eventbridge-sink.ts';
import { WebhookEventSink } from '../adapters/events/webhook-sink.ts';
import { DynamoDBCredentialReader } from '../adapters/host-identity/credential-reader.ts';
import { DynamoDBProofReplayGuard } from '../adapters/host-identity/proof-replay-guard.ts';
import { DynamoDBMeshChangeStore } from '../adapters/mesh/mesh-change-store.ts';
import { DynamoDBMeshRemovals } from '../adapters/mesh/mesh-removals.ts';
import { DynamoDBModuleVersions } from '../adapters/mesh/module-versions.ts';
import { DynamoDBSealingFollowUp } from '../adapters/mesh/sealing-follow-up.ts';
import { DynamoDBSealingKeysFromBefore } from '../adapters/mesh/sealing-keys-from-before.ts';
import { DynamoDBDeliveryReader } from '../adapters/push/delivery-reader.ts';
import { LambdaPushStarter } from '../adapters/push/lambda-push-starter.ts';
import { DynamoDBPushRecords } from '../adapters/push/push-records.ts';
import { DynamoDBPushStore } from '../adapters/push/push-store.ts';
import { DynamoDBPushWork } from '../adapters/push/push-work.ts';
import { StepFunctionsPushFlow } from '../adapters/push/step-functions-push-flow.ts';
import { IotDataSignalPublisher, noBrokerPublisher } from '../adapters/signal/iot-data-publisher.ts';
import { DynamoDBPresenceStore } from '../adapters/signal/presence-store.ts';
import { DynamoDBSummaryStore } from '../adapters/summary/summary-store.ts';
import { DynamoDBMeshViewReader } from '../adapters/views/mesh-view-reader.ts';
import { DynamoDBStatusReader } from '../adapters/views/status-reader.ts';
import { DynamoDBViewPages } from '../adapters/views/view-pages.ts';
import type { ReleaseFiles } from '../core/agent-release/ports.ts';
import type { ConsumerDeps } from '../core/control/consumer.ts';
import { holdPolicyOf } from '../core/control/hold.ts';
import type * as control from '../core/control/ports.ts';
import type * as enrolment from '../core/enrolment/ports.ts';
import {
  AnnouncingPresence,
  AnnouncingReports,
  type EventSink,
  noEvents,
  pushEvent,
  tell,
} from '../core/events/index.ts';
import type { NodeCredentialReader, ProofReplayGuard } from '../core/host-identity/ports.ts';
import { RememberedCredentials } from '../core/host-identity/remembered-credentials.ts';
import type { MeshChangeStore, MeshRemovals, ModuleVersions, PushStore } from '../core/mesh/ports.ts';
import { MeshService } from '../core/mesh/service.ts';
import type { ApplyFlow } from '../core/mesh-file/ports.ts';
import type { Log } from '../core/ports.ts';
import type {
  DeliveryReader,
  PushFlow,
  PushRecords,
  PushStarter,
  PushTaskFunctions,
} from '../core/push/ports.ts';
import { Pusher } from '../core/push/pusher.ts';
import { noteQuietly, RecordedPushFlow } from '../core/push/records.ts';
import { type PushInvocation, type PushJob, runPushJob } from '../core/push/runs.ts';
import { Pushes } from '../core/push/service.ts';
import { pushTaskFunctions } from '../core/push/steps.ts';
import type { PushWork } from '../core/push/work.ts';
import type { SealingKeysFromBefore } from '../core/sealing/keys-from-before.ts';
import { SignalAnnouncer } from '../core/signal/announce.ts';
import { signalChannelFor } from '../core/signal/channel.ts';
import type { PresenceStore, SignalChannels, SignalPublisher } from '../core/signal/ports.ts';
import type { SummaryStore } from '../core/summary/ports.ts';
import type { MeshViewReader, StatusReader } from '../core/views/ports.ts';
import type { ViewPages } from '../core/views/view-pages.ts';
import { runPushDefinition } from '../flows/push-definition.ts';
import type { MeshConfig } from '../setup/config.ts';
import { powertoolsLog } from '../setup/observability.ts';
import { type AgentReleaseParts, agentReleaseBuilders } from './agent-releases.ts';
import { type AuditParts, auditBuilders } from './audit.ts';
import { type HoldParts, holdBuilders } from './holds.ts';
import { lazily } from './lazily.ts';
import { type MeshFileParts, meshFileBuilders } from './mesh-file.ts';
import { type RolloutParts, rolloutBuilders } from './rollouts.ts';

/**
 * Every part of the control plane, built from one configuration in this one place: functions/
 * and the local runtime take their parts from here. A handler names only the ports it takes
 * (each area's ports.ts), which these parts satisfy, so tests pass `partsFor(testConfig)` or
 * typed fakes of just those ports. Each part is built on first
 * use and then kept, so a function builds only the clients and adapters it reaches for, and
 * everything it keeps across invocations (a client's connections, the memory of credentials)
 * lives as long as the process.
 */
export type Parts = {
  readonly config: MeshConfig;
  readonly log: Log;
  readonly now: () => Date;
  // the mesh
  readonly meshService: MeshService;
  readonly meshChanges: MeshChangeStore;
  readonly meshRemovals: MeshRemovals;
  readonly pushStore: PushStore;
  /** Where a push's flow keeps its node lists while it runs. */
  readonly pushWork: PushWork;
  /** An operator's push and its plan: what POST /push and POST /push/plan call. */
  readonly pushes: Pushes;
  readonly pushTasks: PushTaskFunctions;
  /** The push flow, keeping the record of every push it runs. */
  readonly pushFlow: PushFlow;
  readonly pushRecords: PushRecords;
  /** Runs an operator's push where it outlives the request: push-run on AWS, in-process locally. */
  readonly pushStarter: PushStarter;
  /** Hands a push on to a fresh asynchronous invocation of the push-run function named (itself). */
  readonly pushHandOn: (functionArn: string) => (job: PushJob) => Promise<void>;
  readonly deliveries: DeliveryReader;
  readonly statusReader: StatusReader;
  readonly meshView: MeshViewReader;
  readonly viewPages: ViewPages;
  readonly summary: SummaryStore;
  readonly moduleVersions: ModuleVersions;
  // enrolment and host identity
  readonly tokens: enrolment.TokenStore;
  readonly nodeKeys: enrolment.NodeKeyStore;
  readonly keyRotation: enrolment.KeyRotationStore;
  readonly hostIdentities: enrolment.HostIdentityRevocation;
  /** The sealing keys of nodes enrolled before the enrolment kept one, for a one-shot upgrade. */
  readonly sealingKeysFromBefore: SealingKeysFromBefore;
  /** Shared by every host route of the process, as an API Gateway authorizer's cache would be. */
  readonly credentials: NodeCredentialReader;
  readonly replayGuard: ProofReplayGuard;
  // the control queue
  readonly reports: control.ReportStore;
  readonly builds: control.BuildStore;
  readonly sender: control.ControlSender;
  readonly settlement: control.QueueSettlement;
  readonly lostMessages: LostMessageMetrics;
  readonly deadLetterNotes: control.DeadLetterLog & control.DeadLetterReader;
  readonly deadLetterCounter: control.DeadLetterCounter;
  readonly consumer: ConsumerDeps;
  // the change signal
  /** Where a node's host waits for its signal; undefined when no broker is configured. */
  readonly signalChannel: SignalChannels;
  readonly signalPublisher: SignalPublisher;
  readonly signals: SignalAnnouncer;
  readonly signalFailures: CountedMetric;
  readonly presence: PresenceStore;
  /** Where events go once their change committed (docs/events.md): the stack's bus, a signed webhook, or nowhere. */
  readonly events: EventSink;
} & RolloutParts &
  HoldParts &
  AuditParts &
  MeshFileParts &
  AgentReleaseParts;

export type PartsOptions = {
  /** The SDK clients every adapter shares; tests and benches pass ones with middleware (a meter, a lagging index). */
  readonly clients?: { readonly dynamodb?: DynamoDBClient; readonly sqs?: SQSClient };
  /** Replaces any part, for tests and benches that put a fake or a slowed store in one place. */
  readonly overrides?: Partial<Omit<Parts, 'config'>>;
  /**
   * What stands in for AWS where the configuration names no AWS resource for it: the local
   * runtime's (lib/local/parts.ts). Without one, such a part is refused when it is first built.
   */
  readonly standIns?: StandIns;
  /** @default 20 s: well inside the consumer's 30 s, so a slow push cannot time the batch out */
  readonly pushTimeoutMs?: number;
};

/**
 * The parts that run in AWS's place on one machine, handed in by the local runtime: the push
 * flow's ASL run in-process, a push run in this process, the apply jobs' driver, the embedded
 * MQTT broker, and a wrapper of every SDK client (the recorder of the calls the rehearsal judges).
 * Nothing shipped imports them (lib/local/ is never imported by lib/server/).
 */
export type StandIns = {
  /** Runs the push flow when no state machine is configured (`MESH_PUSH_FLOW_ARN`). */
  readonly pushFlow?: (tasks: PushTaskFunctions) => PushFlow;
  /** Runs a push where the request cannot wait for it, when no push-run function is configured. */
  readonly pushStarter?: (run: (job: PushJob, invoked: PushInvocation) => Promise<void>) => PushStarter;
  /** Starts apply jobs when no apply flow is configured. */
  readonly applyFlow?: () => ApplyFlow;
  /** Tells hosts when a broker but no IoT endpoint is configured. */
  readonly signalPublisher?: () => SignalPublisher;
  /** Keeps the agent's executables when no release bucket is configured (MESH_RELEASE_BUCKET). */
  readonly releaseFiles?: () => ReleaseFiles;
  /** Wraps every SDK client the parts make. */
  readonly client?: <C>(client: C) => C;
};

/** A part that AWS would serve, asked for where neither AWS nor a stand-in is given. */
function missing(what: string, setting: string): never {
  throw new Error(
    `no ${what}: configure ${setting} (a deployed stack), or run the local runtime, which stands in for it`,
  );
}

export function partsFor(config: MeshConfig, options: PartsOptions = {}): Parts {
  const wrap = options.standIns?.client ?? (<C>(client: C) => client);
  const table = { tableName: config.inventoryTable };
  const clients = lazily({
    dynamodb: () => documentClient(options.clients?.dynamodb ?? wrap(makeDynamoDBClient(config))),
    sqs: () => options.clients?.sqs ?? wrap(makeSQSClient(config)),
  });
  // A store that makes changes writes each one's audit record with it (lib/server/wiring/audit.ts).
  const audited = () => ({ client: clients.dynamodb, ...table, audit: parts.auditTrail });
  const tables = () => ({
    client: clients.dynamodb,
    inventoryTable: config.inventoryTable,
    identityTable: config.identityTable,
  });
  const parts: Parts = lazily<Parts>({
    config: () => config,
    log: () => powertoolsLog(config.logLevel),
    now: () => () => new Date(),
    meshService: () => new MeshService({ store: parts.meshChanges, removals: parts.meshRemovals }),
    meshChanges: () => new DynamoDBMeshChangeStore(audited()),
    meshRemovals: () => new DynamoDBMeshRemovals({ ...tables(), audit: parts.auditTrail }),
    pushStore: () => new DynamoDBPushStore({ client: clients.dynamodb, ...table }),
    pushWork: () => new DynamoDBPushWork({ client: clients.dynamodb, ...table }),
    pushes: () =>
      new Pushes({
        store: parts.pushStore,
        records: parts.pushRecords,
        starter: parts.pushStarter,
        holds: parts.holds,
        deliveries: parts.deliveries,
        runSteps: (tasks, request) => runPushDefinition(tasks, request),
        now: parts.now,
      }),
    pushTasks: () =>
      pushTaskFunctions(
        new Pusher({
          store: parts.pushStore,
          announce: (node, signal) => parts.signals.announce(node, signal),
          lastSent: parts.deliveries,
          holds: parts.holds,
        }),
        {
          work: parts.pushWork,
          progress: {
            round: (id, progress) =>
              noteQuietly(parts.log, id, () => parts.pushRecords.progress(id, progress)),
            batch: (id, done) => noteQuietly(parts.log, id, () => parts.pushRecords.batchDone(id, done)),
          },
        },
      ),
    pushStarter: () =>
      config.pushRunnerArn
        ? new LambdaPushStarter({ client: makePushRunClient(config), functionArn: config.pushRunnerArn })
        : (options.standIns?.pushStarter?.((job, invoked) => runPushJob(job, parts, invoked)) ??
          missing('push-run function', 'MESH_PUSH_RUNNER_ARN')),
    pushHandOn: () => (functionArn) => async (job) => {
      await new LambdaPushStarter({ client: makePushRunClient(config), functionArn }).start(job, 0);
    },
    pushFlow: () =>
      new RecordedPushFlow({
        flow: config.pushFlowArn
          ? new StepFunctionsPushFlow({
              client: makeSFNClient(config),
              stateMachineArn: config.pushFlowArn,
              work: parts.pushWork,
            })
          : (options.standIns?.pushFlow?.(parts.pushTasks) ?? missing('push flow', 'MESH_PUSH_FLOW_ARN')),
        records: parts.pushRecords,
        finished: (record) => tell(parts.events, [pushEvent(record)]),
        log: parts.log,
        now: parts.now,
      }),
    pushRecords: () => new DynamoDBPushRecords(audited()),
    deliveries: () => new DynamoDBDeliveryReader({ client: clients.dynamodb, ...table }),
    statusReader: () => new DynamoDBStatusReader({ client: clients.dynamodb, ...table }),
    meshView: () => new DynamoDBMeshViewReader({ client: clients.dynamodb, ...table }),
    viewPages: () => new DynamoDBViewPages({ client: clients.dynamodb, ...table, holds: parts.holds }),
    summary: () => new DynamoDBSummaryStore(audited()),
    moduleVersions: () => new DynamoDBModuleVersions(audited()),
    tokens: () => new DynamoDBTokenStore({ ...audited(), identityTable: config.identityTable }),
    nodeKeys: () => new DynamoDBNodeKeyStore({ client: clients.dynamodb, tableName: config.identityTable }),
    keyRotation: () => new DynamoDBKeyRotation({ ...audited(), identityTable: config.identityTable }),
    hostIdentities: () => new DynamoDBDisenrolment({ ...tables(), audit: parts.auditTrail }),
    sealingKeysFromBefore: () => new DynamoDBSealingKeysFromBefore(tables()),
    credentials: () =>
      new RememberedCredentials(
        new DynamoDBCredentialReader({ client: clients.dynamodb, identityTable: config.identityTable }),
      ),
    replayGuard: () => new DynamoDBProofReplayGuard({ client: clients.dynamodb, ...table }),
    reports: () => new AnnouncingReports(new DynamoDBReportStore(audited()), parts.events),
    builds: () => new DynamoDBBuildStore(audited()),
    sender: () => new SqsControlSender({ client: clients.sqs, queueUrl: config.controlQueueUrl }),
    settlement: () =>
      new SqsQueueSettlement({
        client: clients.sqs,
        controlQueueUrl: config.controlQueueUrl,
        deadLetterQueueUrl: config.deadLetterQueueUrl,
      }),
    lostMessages: () => new LostMessageMetrics(),
    deadLetterNotes: () => new DynamoDBDeadLetterLog({ client: clients.dynamodb, ...table }),
    deadLetterCounter: () =>
      new SqsDeadLetterCounter({ client: clients.sqs, queueUrl: config.deadLetterQueueUrl }),
    consumer: () => ({
      reports: parts.reports,
      builds: parts.builds,
      moduleVersions: parts.moduleVersions,
      pushFlow: parts.pushFlow,
      sender: parts.sender,
      settlement: parts.settlement,
      log: parts.log,
      now: parts.now,
      clock: () => parts.now().getTime(),
      holdPolicy: holdPolicyOf(config),
      pushTimeoutMs: options.pushTimeoutMs ?? 20_000,
      countLost: (type) => parts.lostMessages.count(type),
      deadLetterNotes: parts.deadLetterNotes,
      rollouts: parts.rollouts,
      rolloutDriver: parts.rolloutDriver,
      sealing: new DynamoDBSealingFollowUp({ client: clients.dynamodb, ...table }),
    }),
    signalChannel: () => {
      const signal = config.signal;
      return (node) => (signal ? signalChannelFor(signal, node) : undefined);
    },
    signalPublisher: () =>
      config.signal?.iotDataEndpoint
        ? new IotDataSignalPublisher({ client: makeIotDataClient(config, config.signal.iotDataEndpoint) })
        : config.signal
          ? (options.standIns?.signalPublisher?.() ?? missing('signal publisher', 'MESH_IOT_DATA_ENDPOINT'))
          : noBrokerPublisher,
    signals: () =>
      new SignalAnnouncer({
        publisher: parts.signalPublisher,
        log: parts.log,
        countFailure: () => parts.signalFailures.count(),
      }),
    signalFailures: () => new CountedMetric('SignalsNotPublished'),
    presence: () =>
      new AnnouncingPresence(new DynamoDBPresenceStore({ client: clients.dynamodb, ...table }), parts.events),
    events: () =>
      config.eventBusName
        ? new EventBridgeEventSink({
            client: wrap(makeEventBridgeClient(config)),
            busName: config.eventBusName,
            log: parts.log,
          })
        : config.eventsWebhook
          ? new WebhookEventSink({ ...config.eventsWebhook, log: parts.log })
          : noEvents,
    ...rolloutBuilders(() => parts, clients, config),
    ...holdBuilders(() => parts, clients, config),
    ...agentReleaseBuilders(() => parts, clients, config, options.standIns?.releaseFiles),
    ...auditBuilders(clients, config, () => parts.events),
    ...meshFileBuilders(() => parts, clients, config, options.standIns?.applyFlow),
    ...(overridesOf(options.overrides) as object),
  });
  return parts;
}

function overridesOf(overrides: PartsOptions['overrides'] = {}) {
  return Object.fromEntries(Object.entries(overrides).map(([key, value]) => [key, () => value]));
}
