import { join, resolve } from 'node:path';
import { consolePages } from '../clients/cli/console/pages.ts';
import { makeDynamoDBClient, makeSQSClient } from '../server/adapters/aws-clients.ts';
import { queueOne } from '../server/api/handlers/control.ts';
import type { LineFormat } from '../server/core/coded-lines.ts';
import { envelope } from '../server/core/control/messages.ts';
import { keysFromBeforeLine, recordSealingKeysFromBefore } from '../server/core/sealing/keys-from-before.ts';
import { checkConfig, type LogLevel, type MeshConfig } from '../server/setup/config.ts';
import { localResourceNames } from '../server/setup/resources.ts';
import { makePrivateFolder } from './data-folder.ts';
import { lockDataFolder } from './data-folder-lock.ts';
import { type Endpoints, type RunningEmulators, startEmulators } from './emulators.ts';
import type { LocalFirewallLimits } from './firewall.ts';
import { type RunningApi, startLocalApi } from './http-server.ts';
import { type LocalParts, localPartsFor } from './parts.ts';
import { provisionResources } from './provision.ts';
import { runtimeLog } from './runtime-log.ts';
import { type LocalService, localServices } from './services.ts';
import { assertPortFree, freePort } from './tcp-ports.ts';

/** The embedded MQTT broker's port unless MESH_MQTT_PORT says otherwise. */
export const defaultMqttPort = 4601;

export type LocalRuntimeOptions = {
  readonly port: number;
  /** Where events are posted, signed (docs/events.md). */
  readonly eventsWebhook?: { readonly url: string; readonly secret: string };
  /** How the handlers' log lines print (runtime-log.ts). @default 'text' */
  readonly logFormat?: LineFormat;
  readonly host?: string;
  /** The embedded MQTT broker's port, on the same host; 0 for a free one. @default 4601 */
  readonly mqttPort?: number;
  /** Where DynamoDB Local and fauxqs keep their data; in memory when absent. */
  readonly dataDir?: string;
  /** The release keys `mesh agent publish` must be signed by (MESH_RELEASE_KEYS). @default none: no release is taken */
  readonly releaseKeys?: readonly string[];
  readonly resourcePrefix?: string;
  /** @default 'us-east-1' */
  readonly region?: string;
  /** Services already running (AWS_ENDPOINT_URL*, LocalStack say); those are not emulated. */
  readonly given?: Partial<Endpoints>;
  /** How often the console at /console reads the mesh again. @default 5 */
  readonly consoleRefreshSeconds?: number;
  /** Shortens the two-minute hold bound (beds). */
  readonly holdBoundSeconds?: number;
  /** How long `POST /push` waits for a push before answering its id. @default 20 */
  readonly pushWaitSeconds?: number;
  readonly logLevel?: LogLevel;
  readonly services?: readonly LocalService[];
  /** How the parts are built from the configuration. @default localPartsFor */
  readonly wire?: (config: MeshConfig) => LocalParts;
  readonly onProgress?: (line: string) => void;
  /** The API's firewall, stood in for (lib/local/firewall.ts). @default off */
  readonly firewall?: LocalFirewallLimits;
};

export type RunningLocalRuntime = {
  readonly url: string;
  /** Where hosts reach the embedded broker. */
  readonly brokerUrl: string;
  readonly dataDir: string | undefined;
  readonly config: MeshConfig;
  readonly parts: LocalParts;
  readonly emulators: RunningEmulators;
  stop(): Promise<void>;
};

/**
 * The whole control plane in one process: emulators (unless endpoints are given), resources
 * created idempotently, then the wiring's parts handed to the HTTP API and the background
 * services, the same handlers Lambda runs.
 */
export async function startLocalRuntime(options: LocalRuntimeOptions): Promise<RunningLocalRuntime> {
  const progress = options.onProgress ?? (() => undefined);
  const dataDir = options.dataDir ? resolve(options.dataDir) : undefined;
  const region = options.region ?? 'us-east-1';
  const host = options.host ?? '127.0.0.1';
  if (options.port !== 0) await assertPortFree(options.port, 'MESH_PORT', host);
  const mqttPort = options.mqttPort ?? defaultMqttPort;
  if (mqttPort !== 0) await assertPortFree(mqttPort, 'MESH_MQTT_PORT', host);
  const brokerUrl = `mqtt://${host}:${mqttPort === 0 ? await freePort(host) : mqttPort}`;

  // One control plane per data folder, taken before anything opens it (data-folder-lock.ts).
  let lock: ReturnType<typeof lockDataFolder> | undefined;
  if (dataDir) {
    makePrivateFolder(dataDir);
    lock = lockDataFolder(dataDir, progress);
  }
  progress('starting the emulators');
  let emulators: RunningEmulators;
  try {
    emulators = await startEmulators({
      ...(dataDir ? { dataDir } : {}),
      ...(options.given ? { given: options.given } : {}),
    });
  } catch (error) {
    lock?.release();
    throw error;
  }
  const pid = emulators.dynamodbLocal?.pid;
  if (pid !== undefined) lock?.noteChildren([pid]);
  const stack: Array<() => Promise<void>> = [async () => lock?.release(), () => emulators.stop()];
  const stopAll = async () => {
    while (stack.length > 0) await stack.pop()?.();
  };
  try {
    const located = { region, endpoints: emulators.endpoints };
    const dynamodb = makeDynamoDBClient(located);
    const sqs = makeSQSClient(located);
    progress('creating tables and queues');
    const resources = await provisionResources(
      { dynamodb, sqs },
      localResourceNames(options.resourcePrefix ?? 'mesh'),
    );
    dynamodb.destroy();
    sqs.destroy();
    const config = checkConfig({
      ...located,
      ...resources,
      ...(options.holdBoundSeconds ? { holdBoundSeconds: options.holdBoundSeconds } : {}),
      ...(options.pushWaitSeconds !== undefined ? { pushWaitSeconds: options.pushWaitSeconds } : {}),
      ...(options.logLevel ? { logLevel: options.logLevel } : {}),
      signal: { brokerUrl },
      ...(dataDir ? { releaseFolder: join(dataDir, 'releases') } : {}),
      ...(options.releaseKeys ? { releaseKeys: options.releaseKeys } : {}),
      ...(options.eventsWebhook ? { eventsWebhook: options.eventsWebhook } : {}),
    });
    const format = options.logFormat ?? 'text';
    const parts = (
      options.wire ??
      ((wired) => localPartsFor(wired, { overrides: { log: runtimeLog(format, wired.logLevel) } }))
    )(config);

    for (const service of options.services ?? localServices) {
      progress(`starting ${service.name}`);
      const running = await service.start(parts, { dataDir });
      stack.push(() => running.stop());
    }
    // Hosts enrolled before the enrolment kept a sealing key get it copied from their stored
    // keys, and their relations are minted by the `enrolled:<node>` follow-up, as on enrolment.
    const before = await recordSealingKeysFromBefore({
      store: parts.sealingKeysFromBefore,
      announce: async (node) => {
        await queueOne(parts.sender, { message: envelope('enrolled', { node }) });
      },
    });
    if (before.recorded.length + before.keyless.length > 0) progress(keysFromBeforeLine(before));
    const api: RunningApi = await startLocalApi({
      port: options.port,
      parts,
      pages: consolePages({
        refreshSeconds: options.consoleRefreshSeconds ?? 5,
        source: 'local control plane',
      }),
      host,
      ...(options.firewall ? { firewall: options.firewall } : {}),
      releaseFiles: parts.localReleaseFiles,
    });
    stack.push(() => api.stop());
    return { url: api.url, brokerUrl, dataDir, config, parts, emulators, stop: stopAll };
  } catch (error) {
    await stopAll();
    throw error;
  }
}
