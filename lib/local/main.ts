import * as z from 'zod';
import { releaseKeyText } from '../server/core/agent-release/release.ts';
import { lineFormatOf } from '../server/core/coded-lines.ts';
import { logLevelOf, type MeshConfig, releaseKeysOf } from '../server/setup/config.ts';
import { givenEndpoints } from './emulators.ts';
import { LocalRuntimeError } from './errors.ts';
import { localFirewallLimits } from './firewall.ts';
import { defaultMqttPort, startLocalRuntime } from './local-runtime.ts';
import { runtimeLines, runtimePrinter } from './log-lines.ts';
import type { LocalParts } from './parts.ts';
import type { LocalService } from './services.ts';

/**
 * `npm start` (bin/local.ts): the whole control plane on this machine, data kept in MESH_DATA
 * (default .mesh/). The environment is read here, once: MESH_PORT, MESH_MQTT_PORT, MESH_DATA,
 * MESH_RESOURCE_PREFIX, MESH_HOLD_BOUND_SECONDS, MESH_PUSH_WAIT_SECONDS, MESH_LOCAL_FIREWALL, MESH_LOG_LEVEL, MESH_LOG_FORMAT (`json`: one JSON line a message,
 * MESH_EVENTS_WEBHOOK and MESH_EVENTS_WEBHOOK_SECRET (docs/events.md),
 * lib/local/log-lines.ts), AWS_REGION and AWS_ENDPOINT_URL(_DYNAMODB|_SQS) for
 * services already running. Says what it started, stops everything on SIGINT or SIGTERM.
 * `wire` replaces how the parts are built, `services` the background services (a bed that puts
 * a fault in one part, or stops one service).
 */
export async function runLocalRuntime(
  env: NodeJS.ProcessEnv,
  options: {
    readonly wire?: (config: MeshConfig) => LocalParts;
    readonly services?: readonly LocalService[];
  } = {},
): Promise<void> {
  const print = runtimePrinter(lineFormatOf(env.MESH_LOG_FORMAT));
  const { stdout, stderr } = process;
  const settings = z
    .object({
      port: z.coerce.number().int().min(0).max(65535),
      mqttPort: z.coerce.number().int().min(0).max(65535),
      dataDir: z.string().min(1),
      // Table and queue names are `<prefix>-inventory`, `<prefix>-control.fifo`…: within what
      // both DynamoDB and SQS accept in a name, and short enough for SQS's 80 characters.
      resourcePrefix: z.string().regex(/^[A-Za-z0-9_-]{1,40}$/),
      holdBoundSeconds: z.coerce.number().int().positive().max(3600).optional(),
      pushWaitSeconds: z.coerce.number().min(0).max(25).optional(),
      eventsWebhook: z.url({ protocol: /^https?$/ }).optional(),
      eventsWebhookSecret: z.string().min(16).optional(),
      releaseKeys: z.array(releaseKeyText).max(8),
    })
    .refine((values) => values.eventsWebhook === undefined || values.eventsWebhookSecret !== undefined, {
      path: ['eventsWebhookSecret'],
    })
    .safeParse({
      port: env.MESH_PORT ?? 4600,
      mqttPort: env.MESH_MQTT_PORT ?? defaultMqttPort,
      dataDir: env.MESH_DATA ?? '.mesh',
      resourcePrefix: env.MESH_RESOURCE_PREFIX || 'mesh',
      holdBoundSeconds: env.MESH_HOLD_BOUND_SECONDS || undefined,
      pushWaitSeconds: env.MESH_PUSH_WAIT_SECONDS || undefined,
      eventsWebhook: env.MESH_EVENTS_WEBHOOK || undefined,
      eventsWebhookSecret: env.MESH_EVENTS_WEBHOOK_SECRET || undefined,
      releaseKeys: releaseKeysOf(env.MESH_RELEASE_KEYS),
    });
  if (!settings.success) {
    const variables: Record<string, string> = {
      port: 'MESH_PORT must be a port number',
      mqttPort: 'MESH_MQTT_PORT must be a port number',
      dataDir: 'MESH_DATA must name a folder',
      resourcePrefix: 'MESH_RESOURCE_PREFIX must be 1 to 40 letters, digits, - or _',
      holdBoundSeconds: 'MESH_HOLD_BOUND_SECONDS must be a whole number of seconds up to 3600',
      pushWaitSeconds: 'MESH_PUSH_WAIT_SECONDS must be a number of seconds from 0 to 25',
      eventsWebhook: 'MESH_EVENTS_WEBHOOK must be an http or https URL',
      releaseKeys: 'MESH_RELEASE_KEYS must be up to 8 Ed25519 public keys (base64 SPKI), separated by commas',
      eventsWebhookSecret:
        'MESH_EVENTS_WEBHOOK_SECRET must be set with MESH_EVENTS_WEBHOOK, 16 characters or more: every event is signed with it',
    };
    for (const issue of settings.error.issues) {
      const variable = String(issue.path[0]);
      print(stderr, runtimeLines.settingRefused, { variable, problem: variables[variable] ?? issue.message });
    }
    process.exit(2);
  }

  const firewall = localFirewallLimits(env.MESH_LOCAL_FIREWALL);
  if (typeof firewall === 'string') {
    print(stderr, runtimeLines.settingRefused, { variable: 'MESH_LOCAL_FIREWALL', problem: firewall });
    process.exit(2);
  }

  const started = Date.now();
  try {
    const { eventsWebhook: webhookUrl, eventsWebhookSecret, ...rest } = settings.data;
    const runtime = await startLocalRuntime({
      ...rest,
      ...(webhookUrl && eventsWebhookSecret
        ? { eventsWebhook: { url: webhookUrl, secret: eventsWebhookSecret } }
        : {}),
      region: env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1',
      given: givenEndpoints(env),
      logLevel: logLevelOf(env.MESH_LOG_LEVEL),
      ...(firewall ? { firewall } : {}),
      logFormat: lineFormatOf(env.MESH_LOG_FORMAT),
      ...(options.wire ? { wire: options.wire } : {}),
      ...(options.services ? { services: options.services } : {}),
      onProgress: (step) => print(stdout, runtimeLines.starting, { step }),
    });
    // Ready to be stopped before it says it is ready: a signal right after is a clean stop too.
    let stopping = false;
    const stop = async (signal: string) => {
      if (stopping) return;
      stopping = true;
      print(stdout, runtimeLines.stopping, { signal });
      await runtime.stop();
      print(stdout, runtimeLines.stopped, {});
      process.exit(0);
    };
    process.on('SIGINT', () => void stop('SIGINT'));
    process.on('SIGTERM', () => void stop('SIGTERM'));
    const { emulators } = runtime;
    const seconds = Number(((Date.now() - started) / 1000).toFixed(1));
    print(stdout, runtimeLines.ready, { url: runtime.url, seconds });
    print(stdout, runtimeLines.data, { dir: runtime.dataDir });
    print(stdout, runtimeLines.stores, {
      dynamodb: emulators.endpoints.dynamodb,
      dynamodbEmulated: emulators.emulated.dynamodb,
      sqs: emulators.endpoints.sqs,
      sqsEmulated: emulators.emulated.sqs,
    });
    print(stdout, runtimeLines.broker, { url: runtime.brokerUrl });
    print(stdout, runtimeLines.howToStop, {});
  } catch (error) {
    if (error instanceof LocalRuntimeError) {
      print(stderr, runtimeLines.failed, { error: error.name, reason: error.message });
      process.exit(1);
    }
    throw error;
  }
}
