import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import {
  makeDynamoDBClient,
  makeIotDataClient,
  makePushRunClient,
  makeSFNClient,
  makeSQSClient,
} from './adapters/aws-clients.ts';
import { CountedMetric } from './adapters/counted-metric.ts';
import { DynamoDBBuildStore } from './adapters/dynamodb/build-store.ts';
import { DynamoDBCredentialReader } from './adapters/dynamodb/credential-reader.ts';
import { DynamoDBDeliveryReader } from './adapters/dynamodb/delivery-reader.ts';
import { DynamoDBDisenrolment } from './adapters/dynamodb/disenrolment.ts';
import { DynamoDBKeyRotation } from './adapters/dynamodb/key-rotation.ts';
import { DynamoDBLetterLog } from './adapters/dynamodb/letter-log.ts';
import { DynamoDBMeshChangeStore } from './adapters/dynamodb/mesh-change-store.ts';
import { DynamoDBMeshRemovals } from './adapters/dynamodb/mesh-removals.ts';
import { DynamoDBMeshViewReader } from './adapters/dynamodb/mesh-view-reader.ts';
import { DynamoDBModuleVersions } from './adapters/dynamodb/module-versions.ts';
import { DynamoDBNodeKeyStore } from './adapters/dynamodb/node-key-store.ts';
import { DynamoDBPresenceStore } from './adapters/dynamodb/presence-store.ts';
import { DynamoDBProofReplayGuard } from './adapters/dynamodb/proof-replay-guard.ts';
import { DynamoDBPushRecords } from './adapters/dynamodb/push-records.ts';
import { DynamoDBPushStore } from './adapters/dynamodb/push-store.ts';
import { DynamoDBReportStore } from './adapters/dynamodb/report-store.ts';
import { documentClient } from './adapters/dynamodb/requests.ts';
import { DynamoDBSealingFollowUp } from './adapters/dynamodb/sealing-follow-up.ts';
import { DynamoDBSealingKeysFromBefore } from './adapters/dynamodb/sealing-keys-from-before.ts';
import { DynamoDBStatusReader } from './adapters/dynamodb/status-reader.ts';
import { DynamoDBSummaryStore } from './adapters/dynamodb/summary-store.ts';
import { DynamoDBTokenStore } from './adapters/dynamodb/token-store.ts';
import { DynamoDBViewPages } from './adapters/dynamodb/view-pages.ts';
import { LostMessageMetrics } from './adapters/lost-message-metrics.ts';
import { InProcessPushStarter } from './adapters/push-run/in-process-push-starter.ts';
import { LambdaPushStarter } from './adapters/push-run/lambda-push-starter.ts';
import { EmbeddedBrokerPublisher, noBrokerPublisher } from './adapters/signal/embedded-broker-publisher.ts';
import { IotDataSignalPublisher } from './adapters/signal/iot-data-publisher.ts';
import { SqsControlSender } from './adapters/sqs/control-sender.ts';
import { SqsDeadLetterCounter } from './adapters/sqs/dead-letter-counter.ts';
import { SqsQueueSettlement } from './adapters/sqs/queue-settlement.ts';
import { LocalPushFlow } from './adapters/stepfunctions/local-push-flow.ts';
import { StepFunctionsPushFlow } from './adapters/stepfunctions/step-functions-push-flow.ts';
import { built } from './built.ts';
import type { MeshConfig } from './config.ts';
import type { ConsumerDeps } from './core/control/consumer.ts';
import { holdPolicyOf } from './core/control/hold.ts';
import type * as control from './core/control/ports.ts';
import type * as enrolment from './core/enrolment/ports.ts';
import type { NodeCredentialReader, ProofReplayGuard } from './core/host-identity/ports.ts';
import { RememberedCredentials } from './core/host-identity/remembered-credentials.ts';
import type {
  MeshChangeStore,
  MeshRemovals,
  PushRecords,
  PushStarter,
  PushStore,
  PushTaskFunctions,
} from './core/mesh/ports.ts';
import { Pusher } from './core/mesh/push.ts';
import { noteQuietly, RecordedPushFlow } from './core/mesh/push-records.ts';
import { runPushJob } from './core/mesh/push-runs.ts';
import { pushTaskFunctions } from './core/mesh/push-steps.ts';
import { MeshService } from './core/mesh/service.ts';
import type {
  DeliveryReader,
  Log,
  MeshViewReader,
  ModuleVersions,
  PushFlow,
  StatusReader,
} from './core/ports.ts';
import type { SealingKeysFromBefore } from './core/sealing/keys-from-before.ts';
import { SignalAnnouncer } from './core/signal/announce.ts';
import { signalChannelFor } from './core/signal/channel.ts';
import type { PresenceStore, SignalChannels, SignalPublisher } from './core/signal/ports.ts';
import type { SummaryStore } from './core/summary/ports.ts';
import type { ViewPages } from './core/view-pages.ts';
import { powertoolsLog } from './observability.ts';
import { type AuditParts, auditBuilders } from './wiring-audit.ts';
import { type HoldParts, holdBuilders } from './wiring-holds.ts';
import { type MeshFileParts, meshFileBuilders } from './wiring-mesh-file.ts';
import { type RolloutParts, rolloutBuilders } from './wiring-rollouts.ts';

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
  readonly pushTasks: PushTaskFunctions;
  /** The push flow, keeping the record of every push it runs. */
  readonly pushFlow: PushFlow;
  readonly pushRecords: PushRecords;
  /** Runs an operator's push where it outlives the request: push-run on AWS, in-process locally. */
  readonly pushStarter: PushStarter;
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
  readonly letters: control.LetterLog & control.LetterReader;
  readonly deadLetterCounter: control.DeadLetterCounter;
  readonly consumer: ConsumerDeps;
  // the change signal
  /** Where a node's host waits for its signal; undefined when no broker is configured. */
  readonly signalChannel: SignalChannels;
  readonly signalPublisher: SignalPublisher;
  readonly signals: SignalAnnouncer;
  readonly signalFailures: CountedMetric;
  readonly presence: PresenceStore;
  /** The local runtime's broker attaches here (lib/runtime/broker/); the publisher when there is no IoT endpoint. */
  readonly embeddedBroker: EmbeddedBrokerPublisher;
} & RolloutParts &
  HoldParts &
  AuditParts &
  MeshFileParts;

export type PartsOptions = {
  /** The SDK clients every adapter shares; tests and benches pass ones with middleware (a meter, a lagging index). */
  readonly clients?: { readonly dynamodb?: DynamoDBClient; readonly sqs?: SQSClient };
  /** Replaces any part, for tests and benches that put a fake or a slowed store in one place. */
  readonly overrides?: Partial<Omit<Parts, 'config'>>;
  /** Every Retry of the local push flow waits this long instead of the ASL's own waits (tests). */
  readonly flowRetryIntervalMs?: number;
  /** @default 20 s: well inside the consumer's 30 s, so a slow push cannot time the batch out */
  readonly pushTimeoutMs?: number;
};

export function partsFor(config: MeshConfig, options: PartsOptions = {}): Parts {
  const table = { tableName: config.inventoryTable };
  const clients = built({
    dynamodb: () => documentClient(options.clients?.dynamodb ?? makeDynamoDBClient(config)),
    sqs: () => options.clients?.sqs ?? makeSQSClient(config),
  });
  // A store that makes changes writes each one's audit record with it (lib/wiring-audit.ts).
  const audited = () => ({ client: clients.dynamodb, ...table, audit: parts.auditTrail });
  const tables = () => ({
    client: clients.dynamodb,
    inventoryTable: config.inventoryTable,
    identityTable: config.identityTable,
  });
  const parts: Parts = built<Parts>({
    config: () => config,
    log: () => powertoolsLog(config.logLevel),
    now: () => () => new Date(),
    meshService: () => new MeshService({ store: parts.meshChanges, removals: parts.meshRemovals }),
    meshChanges: () => new DynamoDBMeshChangeStore(audited()),
    meshRemovals: () => new DynamoDBMeshRemovals({ ...tables(), audit: parts.auditTrail }),
    pushStore: () => new DynamoDBPushStore({ client: clients.dynamodb, ...table }),
    pushTasks: () =>
      pushTaskFunctions(
        new Pusher({
          store: parts.pushStore,
          announce: (node, signal) => parts.signals.announce(node, signal),
          lastSent: parts.deliveries,
          holds: parts.holds,
        }),
        {
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
        : new InProcessPushStarter((job) => runPushJob(job, parts)),
    pushFlow: () =>
      new RecordedPushFlow({
        flow: config.pushFlowArn
          ? new StepFunctionsPushFlow({ client: makeSFNClient(config), stateMachineArn: config.pushFlowArn })
          : new LocalPushFlow({
              tasks: parts.pushTasks,
              ...(options.flowRetryIntervalMs !== undefined
                ? { retryIntervalMs: options.flowRetryIntervalMs }
                : {}),
            }),
        records: parts.pushRecords,
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
    reports: () => new DynamoDBReportStore(audited()),
    builds: () => new DynamoDBBuildStore(audited()),
    sender: () => new SqsControlSender({ client: clients.sqs, queueUrl: config.controlQueueUrl }),
    settlement: () =>
      new SqsQueueSettlement({
        client: clients.sqs,
        controlQueueUrl: config.controlQueueUrl,
        deadLetterQueueUrl: config.deadLetterQueueUrl,
      }),
    lostMessages: () => new LostMessageMetrics(),
    letters: () => new DynamoDBLetterLog({ client: clients.dynamodb, ...table }),
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
      letters: parts.letters,
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
          ? parts.embeddedBroker
          : noBrokerPublisher,
    signals: () =>
      new SignalAnnouncer({
        publisher: parts.signalPublisher,
        log: parts.log,
        countFailure: () => parts.signalFailures.count(),
      }),
    signalFailures: () => new CountedMetric('SignalsNotPublished'),
    presence: () => new DynamoDBPresenceStore({ client: clients.dynamodb, ...table }),
    embeddedBroker: () => new EmbeddedBrokerPublisher(),
    ...rolloutBuilders(() => parts, clients, config),
    ...holdBuilders(() => parts, clients, config),
    ...auditBuilders(clients, config),
    ...meshFileBuilders(() => parts, clients, config),
    ...(overridesOf(options.overrides) as object),
  });
  return parts;
}

function overridesOf(overrides: PartsOptions['overrides'] = {}) {
  return Object.fromEntries(Object.entries(overrides).map(([key, value]) => [key, () => value]));
}
