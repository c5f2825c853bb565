import { randomUUID } from 'node:crypto';
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
  broker.on('client', (client) => lifecycle(client, 'connected'));
  broker.on('clientDisconnect', (client) => lifecycle(client, 'disconnected'));

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
