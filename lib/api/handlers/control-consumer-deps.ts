import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { makeDynamoDBClient, makeSQSClient } from '../../adapters/aws-clients.ts';
import { createBuildStore } from '../../adapters/dynamodb/build-store.ts';
import { createReportStore } from '../../adapters/dynamodb/report-store.ts';
import { createControlSender } from '../../adapters/sqs/control-sender.ts';
import { createQueueSettlement } from '../../adapters/sqs/queue-settlement.ts';
import type { MeshConfig } from '../../config.ts';
import type { ConsumerDeps } from '../../core/control/consumer.ts';
import { defaultHoldPolicy, type HoldPolicy } from '../../core/control/hold.ts';
import type { ControlLog } from '../../core/control/ports.ts';
import type { ModuleVersions, PushFlow } from '../../core/ports.ts';
import { metrics } from '../../metrics.ts';
import { logger } from '../../observability.ts';
import type { ControlConsumerOptions } from './control-consumer.ts';

export type ConsumerWiring = {
  readonly moduleVersions: ModuleVersions;
  readonly pushFlow: PushFlow;
  readonly holdPolicy?: HoldPolicy;
  /** @default 20 s: well inside the consumer's 30 s, so a slow push cannot time the batch out */
  readonly pushTimeoutMs?: number;
};

/** The consumer's adapters, built once per process from the config. */
export function productionConsumerDeps(config: MeshConfig, wiring: ConsumerWiring): ConsumerDeps {
  const dynamodb = makeDynamoDBClient(config);
  const sqs = makeSQSClient(config);
  return {
    reports: createReportStore(dynamodb, config.inventoryTable),
    builds: createBuildStore(dynamodb, config.inventoryTable),
    sender: createControlSender(sqs, config.controlQueueUrl),
    settlement: createQueueSettlement(sqs, config),
    moduleVersions: wiring.moduleVersions,
    pushFlow: wiring.pushFlow,
    log: controlLog,
    now: () => new Date(),
    clock: () => Date.now(),
    holdPolicy: wiring.holdPolicy ?? holdPolicyOf(config),
    pushTimeoutMs: wiring.pushTimeoutMs ?? 20_000,
    countLost: () => {
      lostSinceFlush += 1;
      metrics.addMetric('LostMessages', MetricUnit.Count, 1);
    },
  };
}

let lostSinceFlush = 0;

/** Publishes LostMessages after a batch that lost any (and only then, so quiet batches log nothing). */
export const publishLostMetrics: ControlConsumerOptions = {
  afterBatch: () => {
    if (lostSinceFlush === 0) return;
    lostSinceFlush = 0;
    metrics.publishStoredMetrics();
  },
};

/** Powertools' logger behind the core's small log port. */
export const controlLog: ControlLog = {
  info: (message, extra) => logger.info(message, extra ?? {}),
  warn: (message, extra) => logger.warn(message, extra ?? {}),
  error: (message, extra) => logger.error(message, extra ?? {}),
};

/** The two-minute bound unless the configuration shortens it (beds and the real-time test do). */
export function holdPolicyOf(config: Pick<MeshConfig, 'holdBoundSeconds'>): HoldPolicy {
  return config.holdBoundSeconds
    ? { ...defaultHoldPolicy, boundSeconds: config.holdBoundSeconds }
    : defaultHoldPolicy;
}
