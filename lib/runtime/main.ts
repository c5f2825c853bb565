import * as z from 'zod';
import { logLevelOf, type MeshConfig } from '../config.ts';
import type { Parts } from '../wiring.ts';
import { givenEndpoints } from './emulators.ts';
import { LocalRuntimeError } from './errors.ts';
import { defaultMqttPort, startLocalRuntime } from './local-runtime.ts';
import type { LocalService } from './services.ts';

/**
 * `npm start` (bin/local.ts): the whole control plane on this machine, data kept in MESH_DATA
 * (default .mesh/). The environment is read here, once: MESH_PORT, MESH_MQTT_PORT, MESH_DATA,
 * MESH_HOLD_BOUND_SECONDS, MESH_PUSH_WAIT_SECONDS, MESH_LOG_LEVEL, AWS_REGION and AWS_ENDPOINT_URL(_DYNAMODB|_SQS) for
 * services already running. Says what it started, stops everything on SIGINT or SIGTERM.
 * `wire` replaces how the parts are built, `services` the background services (a bed that puts
 * a fault in one part, or stops one service).
 */
export async function runLocalRuntime(
  env: NodeJS.ProcessEnv,
  options: {
    readonly wire?: (config: MeshConfig) => Parts;
    readonly services?: readonly LocalService[];
  } = {},
): Promise<void> {
  const settings = z
    .object({
      port: z.coerce.number().int().min(0).max(65535),
      mqttPort: z.coerce.number().int().min(0).max(65535),
      dataDir: z.string().min(1),
      holdBoundSeconds: z.coerce.number().int().positive().max(3600).optional(),
      pushWaitSeconds: z.coerce.number().min(0).max(25).optional(),
    })
    .safeParse({
      port: env.MESH_PORT ?? 4600,
      mqttPort: env.MESH_MQTT_PORT ?? defaultMqttPort,
      dataDir: env.MESH_DATA ?? '.mesh',
      holdBoundSeconds: env.MESH_HOLD_BOUND_SECONDS || undefined,
      pushWaitSeconds: env.MESH_PUSH_WAIT_SECONDS || undefined,
    });
  if (!settings.success) {
    const variables: Record<string, string> = {
      port: 'MESH_PORT must be a port number',
      mqttPort: 'MESH_MQTT_PORT must be a port number',
      dataDir: 'MESH_DATA must name a folder',
      holdBoundSeconds: 'MESH_HOLD_BOUND_SECONDS must be a whole number of seconds up to 3600',
      pushWaitSeconds: 'MESH_PUSH_WAIT_SECONDS must be a number of seconds from 0 to 25',
    };
    for (const issue of settings.error.issues)
      process.stderr.write(`mesh: ${variables[String(issue.path[0])] ?? issue.message}\n`);
    process.exit(2);
  }

  const started = Date.now();
  try {
    const runtime = await startLocalRuntime({
      ...settings.data,
      region: env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1',
      given: givenEndpoints(env),
      logLevel: logLevelOf(env.MESH_LOG_LEVEL),
      ...(options.wire ? { wire: options.wire } : {}),
      ...(options.services ? { services: options.services } : {}),
      onProgress: (line) => process.stdout.write(`mesh: ${line}\n`),
    });
    const { emulators } = runtime;
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    process.stdout.write(
      [
        `mesh: control plane ready in ${seconds} s at ${runtime.url}`,
        `mesh: data kept in ${runtime.dataDir}`,
        `mesh: DynamoDB ${emulators.emulated.dynamodb ? 'Local' : 'given'} at ${emulators.endpoints.dynamodb}, SQS ${emulators.emulated.sqs ? '(fauxqs)' : 'given'} at ${emulators.endpoints.sqs}`,
        `mesh: hosts wait for their signal on the embedded MQTT broker at ${runtime.brokerUrl}`,
        'mesh: press Ctrl-C to stop',
        '',
      ].join('\n'),
    );
    let stopping = false;
    const stop = async (signal: string) => {
      if (stopping) return;
      stopping = true;
      process.stdout.write(`mesh: ${signal} received, stopping\n`);
      await runtime.stop();
      process.stdout.write('mesh: stopped\n');
      process.exit(0);
    };
    process.on('SIGINT', () => void stop('SIGINT'));
    process.on('SIGTERM', () => void stop('SIGTERM'));
  } catch (error) {
    if (error instanceof LocalRuntimeError) {
      process.stderr.write(`mesh: ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
}
