import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { Aedes, type AuthenticateError, type Client } from 'aedes';
import type { IoTCustomAuthorizerEvent } from 'aws-lambda';
import { logLine, say } from '../server/core/coded-lines.ts';
import type { Log } from '../server/core/ports.ts';
import { type IotPolicyDocument, type IotScope, iotArn, policyAllows } from '../server/core/signal/policy.ts';
import type { BrokerAuthorizerHandler, BrokerLifecycleHandler } from '../server/functions/spec.ts';
import { recordCall } from './call-record.ts';
import { runtimeLines } from './log-lines.ts';

export type EmbeddedBrokerOptions = {
  readonly host: string;
  /** 0 for a free port. */
  readonly port: number;
  /** The same authorizer AWS IoT calls (lib/server/api/handlers/signal.ts). */
  readonly authorize: BrokerAuthorizerHandler;
  /** The same presence function IoT's lifecycle rule calls. */
  readonly lifecycle: BrokerLifecycleHandler;
  /** The account and region the policy's ARNs name. */
  readonly scope: IotScope;
  readonly log: Log;
  /**
   * Where the broker keeps the ids of the clients connected now (the data folder's), so that a
   * start after a stop it never finished (a kill, a crash) tells the presence function each of
   * them disconnected, as IoT does when a connection drops: a host still backing off is not
   * shown online. None: nothing outlives the broker.
   */
  readonly connectedFile?: string;
};

export type RunningBroker = {
  readonly url: string;
  /** Publishes a retained QoS 1 message as the control plane (IoT's data plane Publish). */
  publish(topic: string, payload: Buffer): Promise<void>;
  stop(): Promise<void>;
};

/** MQTT CONNACK codes: 3 server unavailable, 4 bad username or password, 5 not authorized. */
const refusal = (returnCode: 3 | 4 | 5, message: string): AuthenticateError =>
  Object.assign(new Error(message), { returnCode }) as AuthenticateError;

/**
 * The local stand-in for AWS IoT Core: aedes on a loopback TCP port. Its authenticate hook
 * calls the broker's custom authorizer with the event IoT would send; the policy documents the
 * authorizer answers are kept per client and enforced by `policyAllows` for connect (the client
 * id), subscribe, publish and every message forwarded (receive). Client connects and
 * disconnects feed the presence function as IoT's lifecycle events would, each connection with
 * a version that grows across restarts.
 */
export async function startEmbeddedBroker(options: EmbeddedBrokerOptions): Promise<RunningBroker> {
  const policies = new WeakMap<Client, readonly IotPolicyDocument[]>();
  const versions = new WeakMap<Client, number>();
  const presenceWrites = new Set<Promise<unknown>>();
  let lastVersion = 0;
  const allows = (client: Client | null, action: Parameters<typeof policyAllows>[1], arn: string) =>
    client !== null && judged(policies.get(client) ?? [], action, arn);

  const broker = await Aedes.createBroker({
    authenticate: (client, username, password, done) => {
      authenticate(client, username, password).then(
        () => done(null, true),
        (error: AuthenticateError) => done(error, false),
      );
    },
    authorizeSubscribe: (client, subscription, done) => {
      const allowed = allows(
        client,
        'iot:Subscribe',
        iotArn(options.scope, 'topicfilter', subscription.topic),
      );
      done(null, allowed ? subscription : null);
    },
    authorizePublish: (client, packet, done) => {
      const allowed = allows(client, 'iot:Publish', iotArn(options.scope, 'topic', packet.topic));
      done(allowed ? null : new Error(`not authorized to publish on ${packet.topic}`));
    },
    authorizeForward: (client, packet) =>
      allows(client, 'iot:Receive', iotArn(options.scope, 'topic', packet.topic)) ? packet : null,
  });

  async function authenticate(client: Client, username: string | undefined, password: Buffer | undefined) {
    const event: IoTCustomAuthorizerEvent = {
      signatureVerified: false,
      protocols: ['tls', 'mqtt'],
      protocolData: {
        mqtt: {
          clientId: client.id,
          ...(username !== undefined ? { username } : {}),
          ...(password !== undefined ? { password: password.toString('base64') } : {}),
        },
      },
      connectionMetadata: { id: randomUUID() },
    };
    let answer: Awaited<ReturnType<BrokerAuthorizerHandler>>;
    try {
      answer = await options.authorize(event);
    } catch (error) {
      const reason = (error as Error).message;
      logLine(options.log, say(runtimeLines.brokerAuthorizerFailed, { reason }), { error: reason });
      throw refusal(3, 'the authorizer could not answer');
    }
    if (!answer.isAuthenticated) throw refusal(4, 'refused by the authorizer');
    const documents = answer.policyDocuments as unknown as IotPolicyDocument[];
    if (!judged(documents, 'iot:Connect', iotArn(options.scope, 'client', client.id))) {
      throw refusal(5, `not authorized to connect as client ${client.id}`);
    }
    policies.set(client, documents);
  }

  const lifecycle = (client: Client, eventType: 'connected' | 'disconnected') => {
    if (!policies.has(client)) return;
    if (eventType === 'connected') {
      lastVersion = Math.max(lastVersion + 1, Date.now());
      versions.set(client, lastVersion);
    }
    const write = options
      .lifecycle({
        clientId: client.id,
        eventType,
        timestamp: Date.now(),
        versionNumber: versions.get(client) ?? 0,
      })
      .catch((error: unknown) => {
        const reason = (error as Error).message;
        logLine(options.log, say(runtimeLines.brokerPresenceNotRecorded, { client: client.id, reason }), {
          error: reason,
        });
      })
      .finally(() => presenceWrites.delete(write));
    presenceWrites.add(write);
  };
  // Connections a stop never saw end: each is over, whatever its version, as of now.
  const connected = new Map<string, Client>();
  const keepConnected = connectedKeeper(options.connectedFile);
  lastVersion = Date.now();
  for (const clientId of keepConnected.left()) {
    const write = options
      .lifecycle({ clientId, eventType: 'disconnected', timestamp: lastVersion, versionNumber: lastVersion })
      .catch((error: unknown) => {
        const reason = (error as Error).message;
        logLine(options.log, say(runtimeLines.brokerPresenceNotRecorded, { client: clientId, reason }), {
          error: reason,
        });
      });
    await write;
  }
  keepConnected.keep(connected);
  broker.on('client', (client) => {
    if (policies.has(client)) connected.set(client.id, client);
    keepConnected.keep(connected);
    lifecycle(client, 'connected');
  });
  broker.on('clientDisconnect', (client) => {
    // a client that connected again under its id took its place: that one is still connected
    if (connected.get(client.id) === client) connected.delete(client.id);
    keepConnected.keep(connected);
    lifecycle(client, 'disconnected');
  });

  const server: Server = createServer(broker.handle);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port, options.host, () => resolve());
    });
  } catch (error) {
    await new Promise<void>((resolve) => broker.close(() => resolve()));
    throw error;
  }
  const address = server.address();
  const port = address && typeof address === 'object' ? address.port : options.port;

  return {
    url: `mqtt://${options.host}:${port}`,
    publish: (topic, payload) =>
      new Promise<void>((resolve, reject) =>
        broker.publish({ cmd: 'publish', topic, payload, qos: 1, retain: true, dup: false }, (error) =>
          error ? reject(error) : resolve(),
        ),
      ),
    async stop() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      await new Promise<void>((resolve) => broker.close(() => resolve()));
      await closed;
      await Promise.allSettled([...presenceWrites]);
      keepConnected.keep(new Map(), { now: true });
    },
  };
}

/**
 * The file of connected client ids: read once at start, written at most once a second after a
 * change (thousands of hosts reconnecting write it a few times, not thousands), and at once on
 * a stop.
 */
function connectedKeeper(path: string | undefined) {
  let pending: NodeJS.Timeout | undefined;
  let latest: readonly string[] = [];
  const write = () => {
    pending = undefined;
    if (path) writeFileSync(path, `${JSON.stringify(latest)}\n`, { mode: 0o600 });
  };
  return {
    left(): string[] {
      if (!path) return [];
      try {
        const ids: unknown = JSON.parse(readFileSync(path, 'utf8'));
        return Array.isArray(ids) ? ids.filter((id): id is string => typeof id === 'string') : [];
      } catch {
        return [];
      }
    },
    keep(ids: ReadonlyMap<string, unknown>, options: { readonly now?: boolean } = {}) {
      if (!path) return;
      latest = [...ids.keys()];
      if (options.now) {
        clearTimeout(pending);
        write();
      } else pending ??= setTimeout(write, 1_000).unref();
    },
  };
}

/** The policy's answer, recorded (when calls are) for the rehearsal to judge the same documents with IAM's evaluator. */
function judged(
  policies: readonly IotPolicyDocument[],
  action: Parameters<typeof policyAllows>[1],
  resource: string,
): boolean {
  const allowed = policyAllows(policies, action, resource);
  recordCall({ broker: action, resource, allowed, policies });
  return allowed;
}
