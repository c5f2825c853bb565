import * as z from 'zod';
import { releaseKeyText } from '../core/agent-release/release.ts';

const logLevels = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'CRITICAL', 'SILENT'] as const;
export type LogLevel = (typeof logLevels)[number];

/**
 * Configuration read once, at a process's or Lambda's start, and passed in from there.
 * `endpoints` is set only by the local runtime, which knows where its emulators listen; on AWS
 * and against LocalStack the SDK reads AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE> itself.
 */
const configSchema = z.object({
  region: z.string().min(1),
  inventoryTable: z.string().min(3),
  identityTable: z.string().min(3),
  controlQueueUrl: z.url(),
  deadLetterQueueUrl: z.url(),
  /** When set, push runs on the Step Functions Express state machine; otherwise in-process from the same ASL. */
  pushFlowArn: z.string().startsWith('arn:').optional(),
  /** The rollout flow (Standard); absent locally, where the runtime's own driver steps rollouts. */
  rolloutFlowArn: z.string().startsWith('arn:').optional(),
  /** The apply flow (Standard); absent locally, where the runtime's own driver advances apply jobs. */
  applyFlowArn: z.string().startsWith('arn:').optional(),
  /** When set, an operator's push runs in the push-run function; otherwise in-process. */
  pushRunnerArn: z.string().startsWith('arn:').optional(),
  /**
   * At most how long `POST /push` waits for a push to finish before answering 202 with its id;
   * by default as long as the request may still take (tests set 0 to see the 202).
   */
  pushWaitSeconds: z.coerce.number().min(0).max(25).optional(),
  /** How long a message may be held before it is let go as lost; two minutes unless shortened (tests, beds). */
  holdBoundSeconds: z.coerce.number().int().positive().max(3600).optional(),
  /** How long audit records are kept (their TTL, docs/audit.md); a year unless set. */
  auditRetentionDays: z.coerce.number().int().positive().max(3650).optional(),
  logLevel: z.enum(logLevels),
  /** The change signal (lib/core/signal/); absent, hosts poll and pushes publish nothing. */
  signal: z
    .object({
      /** Where hosts connect: `mqtts://<IoT data endpoint>:443` on AWS, `mqtt://127.0.0.1:4601` locally. */
      brokerUrl: z.url(),
      /** The IoT custom authorizer hosts name in their MQTT username (AWS only). */
      authorizerName: z.string().min(1).max(128).optional(),
      /** When set, pushes publish through the IoT data plane there; otherwise to the embedded broker. */
      iotDataEndpoint: z.string().min(1).optional(),
      /** The account and partition the broker policy's ARNs name (region is `region`). */
      accountId: z
        .string()
        .regex(/^\d{12}$/)
        .default('000000000000'),
      partition: z.string().min(1).default('aws'),
    })
    .optional(),
  /**
   * The release keys (MESH_RELEASE_KEYS, comma separated) whose signature `mesh agent publish`
   * must carry; none: the control plane takes no release (docs/host-agent.md, "Releases").
   */
  releaseKeys: z.array(releaseKeyText).max(8).default([]),
  /** The bucket the executables are kept in (MESH_RELEASE_BUCKET); absent locally, where the data folder keeps them. */
  releaseBucket: z.string().min(3).max(63).optional(),
  /** Where the local runtime keeps the executables: DIR/releases, or a folder of its own for a runtime without one. */
  releaseFolder: z.string().min(1).optional(),
  endpoints: z.object({ dynamodb: z.url().optional(), sqs: z.url().optional() }).optional(),
  /** The stack's EventBridge bus events are put on (MESH_EVENT_BUS_NAME; docs/events.md); AWS's. */
  eventBusName: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,256}$/)
    .optional(),
  /** Where events are posted, signed (MESH_EVENTS_WEBHOOK and its secret; docs/events.md); the local runtime's. */
  eventsWebhook: z.object({ url: z.url(), secret: z.string().min(16) }).optional(),
});

export type MeshConfig = z.infer<typeof configSchema>;

export class ConfigurationError extends Error {
  override name = 'ConfigurationError';
}

/** An unknown level falls back to INFO: a typo in a variable must not stop every handler. */
export function logLevelOf(value: string | undefined): LogLevel {
  const wanted = value?.toUpperCase();
  return logLevels.find((level) => level === wanted) ?? 'INFO';
}

export function readConfig(env: NodeJS.ProcessEnv = process.env): MeshConfig {
  return checkConfig({
    region: env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1',
    inventoryTable: env.MESH_INVENTORY_TABLE,
    identityTable: env.MESH_IDENTITY_TABLE,
    controlQueueUrl: env.MESH_CONTROL_QUEUE_URL,
    deadLetterQueueUrl: env.MESH_DEAD_LETTER_QUEUE_URL,
    pushFlowArn: env.MESH_PUSH_FLOW_ARN || undefined,
    rolloutFlowArn: env.MESH_ROLLOUT_FLOW_ARN || undefined,
    applyFlowArn: env.MESH_APPLY_FLOW_ARN || undefined,
    pushRunnerArn: env.MESH_PUSH_RUNNER_ARN || undefined,
    pushWaitSeconds: env.MESH_PUSH_WAIT_SECONDS || undefined,
    holdBoundSeconds: env.MESH_HOLD_BOUND_SECONDS || undefined,
    auditRetentionDays: env.MESH_AUDIT_RETENTION_DAYS || undefined,
    eventBusName: env.MESH_EVENT_BUS_NAME || undefined,
    logLevel: logLevelOf(env.MESH_LOG_LEVEL),
    releaseKeys: releaseKeysOf(env.MESH_RELEASE_KEYS),
    releaseBucket: env.MESH_RELEASE_BUCKET || undefined,
    signal: env.MESH_SIGNAL_BROKER_URL
      ? {
          brokerUrl: env.MESH_SIGNAL_BROKER_URL,
          authorizerName: env.MESH_SIGNAL_AUTHORIZER || undefined,
          iotDataEndpoint: env.MESH_IOT_DATA_ENDPOINT || undefined,
          accountId: env.MESH_ACCOUNT_ID || undefined,
          partition: env.MESH_PARTITION || undefined,
        }
      : undefined,
  });
}

/** MESH_RELEASE_KEYS: release keys (base64 SPKI) separated by commas, spaces ignored. */
export const releaseKeysOf = (value: string | undefined): string[] =>
  (value ?? '')
    .split(',')
    .map((key) => key.trim())
    .filter((key) => key.length > 0);

/** Validates a configuration assembled in code (the local runtime, tests), with the same rules. */
export function checkConfig(values: Record<string, unknown>): MeshConfig {
  const parsed = configSchema.safeParse({ logLevel: 'INFO', ...values });
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigurationError(`Mesh configuration is incomplete (${problems.join('; ')})`);
  }
  return parsed.data;
}

/** The environment variables that carry a MeshConfig, for the CDK functions. */
export function configEnvironment(
  config: Omit<MeshConfig, 'pushWaitSeconds'> & Partial<Pick<MeshConfig, 'pushWaitSeconds'>>,
): Record<string, string> {
  return {
    AWS_REGION: config.region,
    MESH_INVENTORY_TABLE: config.inventoryTable,
    MESH_IDENTITY_TABLE: config.identityTable,
    MESH_CONTROL_QUEUE_URL: config.controlQueueUrl,
    MESH_DEAD_LETTER_QUEUE_URL: config.deadLetterQueueUrl,
    MESH_LOG_LEVEL: config.logLevel,
    ...(config.pushFlowArn ? { MESH_PUSH_FLOW_ARN: config.pushFlowArn } : {}),
    ...(config.rolloutFlowArn ? { MESH_ROLLOUT_FLOW_ARN: config.rolloutFlowArn } : {}),
    ...(config.applyFlowArn ? { MESH_APPLY_FLOW_ARN: config.applyFlowArn } : {}),
    ...(config.pushRunnerArn ? { MESH_PUSH_RUNNER_ARN: config.pushRunnerArn } : {}),
    ...(config.pushWaitSeconds !== undefined
      ? { MESH_PUSH_WAIT_SECONDS: String(config.pushWaitSeconds) }
      : {}),
    ...(config.holdBoundSeconds ? { MESH_HOLD_BOUND_SECONDS: String(config.holdBoundSeconds) } : {}),
    ...(config.auditRetentionDays ? { MESH_AUDIT_RETENTION_DAYS: String(config.auditRetentionDays) } : {}),
    ...(config.eventBusName ? { MESH_EVENT_BUS_NAME: config.eventBusName } : {}),
    ...(config.releaseKeys.length > 0 ? { MESH_RELEASE_KEYS: config.releaseKeys.join(',') } : {}),
    ...(config.releaseBucket ? { MESH_RELEASE_BUCKET: config.releaseBucket } : {}),
    ...(config.signal ? signalEnvironment(config.signal) : {}),
  };
}

/** The environment variables that carry the signal's settings. */
export function signalEnvironment(
  signal: z.input<typeof configSchema>['signal'] & object,
): Record<string, string> {
  return {
    MESH_SIGNAL_BROKER_URL: signal.brokerUrl,
    ...(signal.authorizerName ? { MESH_SIGNAL_AUTHORIZER: signal.authorizerName } : {}),
    ...(signal.iotDataEndpoint ? { MESH_IOT_DATA_ENDPOINT: signal.iotDataEndpoint } : {}),
    ...(signal.accountId ? { MESH_ACCOUNT_ID: signal.accountId } : {}),
    ...(signal.partition ? { MESH_PARTITION: signal.partition } : {}),
  };
}
