import { connectAsync, type IClientOptions, type MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MqttSignalLink } from '../../lib/clients/host/agent/mqtt-signal-link.ts';
import type { NodeKeys } from '../../lib/clients/host/keys.ts';
import { signingKeyOf } from '../../lib/clients/host/keys.ts';
import { connectPassword } from '../../lib/clients/host/proof.ts';
import { type RunningBroker, startEmbeddedBroker } from '../../lib/local/embedded-broker.ts';
import { type LocalParts, localPartsFor } from '../../lib/local/parts.ts';
import { signalAuthorizerHandler, signalPresenceHandler } from '../../lib/server/api/handlers/signal.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { signalTopic } from '../../lib/server/core/signal/channel.ts';
import { checkConfig } from '../../lib/server/setup/config.ts';
import { RecordingLog } from '../support/control-fakes.ts';
import { addEnrolledNode } from '../support/enrolled-nodes.ts';
import { provisionTestResources } from '../support/resources.ts';

/**
 * The broker's security, over the wire: the embedded broker with the real authorizer, policy and
 * presence function on DynamoDB Local, and real MQTT clients doing what a host (or someone
 * holding one node's key) might try.
 */
let parts: LocalParts;
let broker: RunningBroker;
let detach: () => void;
const keys = new Map<string, NodeKeys>();
const clients: MqttClient[] = [];

async function startBroker(of: LocalParts) {
  const signal = of.config.signal as NonNullable<LocalParts['config']['signal']>;
  return startEmbeddedBroker({
    host: '127.0.0.1',
    port: 0,
    authorize: signalAuthorizerHandler(of),
    lifecycle: signalPresenceHandler(of),
    scope: { partition: signal.partition, region: of.config.region, accountId: signal.accountId },
    log: of.log,
  });
}

beforeAll(async () => {
  const resources = await provisionTestResources('signal');
  const config = checkConfig({ ...resources, signal: { brokerUrl: 'mqtt://127.0.0.1:4601' } });
  parts = localPartsFor(config, { overrides: { log: new RecordingLog() } });
  broker = await startBroker(parts);
  detach = parts.embeddedBroker.attach((topic, payload) => broker.publish(topic, payload));
  for (const node of ['alpha', 'beta']) keys.set(node, await addEnrolledNode(parts, node));
});

afterAll(async () => {
  await Promise.allSettled(clients.map((client) => client.endAsync(true)));
  detach();
  await broker.stop();
});

const password = (node: string, options: { signer?: string; now?: () => Date } = {}) =>
  connectPassword(signingKeyOf(node, keys.get(options.signer ?? node) as NodeKeys), {
    ...(options.now ? { now: options.now } : {}),
  });

/** Connects a real MQTT client; the refusal's message when the broker says no. */
async function connect(options: IClientOptions): Promise<MqttClient | { refused: string }> {
  try {
    const client = await connectAsync(
      broker.url,
      { reconnectPeriod: 0, connectTimeout: 5_000, ...options },
      false,
    );
    clients.push(client);
    return client;
  } catch (error) {
    return { refused: (error as Error).message };
  }
}

async function connectAs(node: string): Promise<MqttClient> {
  const client = await connect({ clientId: node, username: node, password: await password(node) });
  if ('refused' in client) throw new Error(`${node} could not connect: ${client.refused}`);
  return client;
}

/** Every message a client receives, as `topic payload`. */
function inbox(client: MqttClient): string[] {
  const received: string[] = [];
  client.on('message', (topic, payload) => received.push(`${topic} ${payload.toString()}`));
  return received;
}

const settle = (ms = 400) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a node on the embedded broker', () => {
  it('connects with a fresh proof, subscribes to its own topic and gets the latest signal, retained', async () => {
    await parts.signalPublisher.publish('alpha', { revision: 7, etag: '"7-abc"' });
    const alpha = await connectAs('alpha');
    const received = inbox(alpha);

    const [granted] = await alpha.subscribeAsync(signalTopic('alpha'), { qos: 1 });
    await settle();

    expect(granted?.qos).toBe(1);
    expect(received).toEqual([`mesh/nodes/alpha/signal {"revision":7,"etag":"\\"7-abc\\""}`]);
  });

  it("cannot subscribe to another node's topic, nor to a wildcard over the nodes, nor receive another node's signal", async () => {
    const alpha = await connectAs('alpha');
    const beta = await connectAs('beta');
    const alphaGot = inbox(alpha);
    const betaGot = inbox(beta);
    await beta.subscribeAsync(signalTopic('beta'), { qos: 1 });

    const refusals = await Promise.all(
      ['mesh/nodes/beta/signal', 'mesh/nodes/+/signal', 'mesh/#', '#'].map((filter) =>
        alpha.subscribeAsync(filter, { qos: 1 }).then(
          () => `${filter}: granted`,
          (error: Error) => `${filter}: ${error.message}`,
        ),
      ),
    );
    await parts.signalPublisher.publish('beta', { revision: 3, etag: '"3-beta"' });
    await settle();

    expect(refusals).toEqual([
      'mesh/nodes/beta/signal: Subscribe error: Unspecified error',
      'mesh/nodes/+/signal: Subscribe error: Unspecified error',
      'mesh/#: Subscribe error: Unspecified error',
      '#: Subscribe error: Unspecified error',
    ]);
    expect(alphaGot).toEqual([]);
    expect(betaGot).toContain('mesh/nodes/beta/signal {"revision":3,"etag":"\\"3-beta\\""}');
  });

  it('cannot publish on any signal topic, its own included: it is dropped and nothing reaches a subscriber', async () => {
    const beta = await connectAs('beta');
    const betaGot = inbox(beta);
    await beta.subscribeAsync(signalTopic('beta'), { qos: 1 });
    await settle();
    betaGot.length = 0;
    const alpha = await connectAs('alpha');
    const closed = new Promise<void>((resolve) => alpha.once('close', () => resolve()));

    alpha.publish(signalTopic('beta'), '{"revision":99,"etag":"\\"forged\\""}', { qos: 1, retain: true });
    alpha.publish(signalTopic('alpha'), '{"revision":99,"etag":"\\"forged\\""}', { qos: 1, retain: true });
    await closed;
    await settle();
    const later = await connectAs('beta');
    const laterGot = inbox(later);
    await later.subscribeAsync(signalTopic('beta'), { qos: 1 });
    await settle();

    expect(betaGot).toEqual([]);
    expect(laterGot.join('\n')).not.toContain('forged');
  });

  it('cannot connect as another client id, even with its own valid password', async () => {
    const attempt = await connect({ clientId: 'beta', username: 'alpha', password: await password('alpha') });

    expect(attempt).toEqual({ refused: expect.stringMatching(/Not authorized/i) });
  });

  it('is refused with a wrong, expired, replayed or other-node password', async () => {
    const replayed = await password('alpha');
    await connectAs('beta');
    const first = await connect({ clientId: 'alpha', username: 'alpha', password: replayed });
    const ago = new Date(Date.now() - 5 * 60_000);

    const attempts = {
      wrong: await connect({
        clientId: 'alpha',
        username: 'alpha',
        password: await password('alpha', { signer: 'beta' }),
      }),
      expired: await connect({
        clientId: 'alpha',
        username: 'alpha',
        password: await password('alpha', { now: () => ago }),
      }),
      replayed: await connect({ clientId: 'alpha', username: 'alpha', password: replayed }),
      otherNode: await connect({ clientId: 'alpha', username: 'alpha', password: await password('beta') }),
      noPassword: await connect({ clientId: 'alpha', username: 'alpha' }),
    };

    expect('refused' in first).toBe(false);
    for (const [what, attempt] of Object.entries(attempts)) {
      expect(attempt, what).toEqual({ refused: expect.stringMatching(/Bad username or password/i) });
    }
  });

  it('is refused when the node never enrolled', async () => {
    await parts.meshService.addNode('gamma', {}, localActor());
    const { keys: strays } = await import('../../lib/clients/host/keys.ts').then((module) =>
      module.generateNodeKeys(),
    );

    const attempt = await connect({
      clientId: 'gamma',
      username: 'gamma',
      password: await connectPassword(signingKeyOf('gamma', strays)),
    });

    expect(attempt).toEqual({ refused: expect.stringMatching(/Bad username or password/i) });
  });
});

describe('presence from the broker', () => {
  const statusOf = async (node: string) =>
    (await parts.statusReader.status()).find((entry) => entry.node === node);
  const eventually = async <T>(check: () => Promise<T | undefined>) => {
    for (let attempt = 0; attempt < 50; attempt += 1) {
      const value = await check();
      if (value !== undefined) return value;
      await settle(100);
    }
    throw new Error('timed out');
  };

  it('shows a node online while its host is connected, and offline, last heard then, once it left', async () => {
    await addEnrolledNode(parts, 'delta').then((delta) => keys.set('delta', delta));
    expect((await statusOf('delta'))?.online).toBeNull();

    const delta = await connectAs('delta');
    const online = await eventually(async () => {
      const status = await statusOf('delta');
      return status?.online ? status : undefined;
    });
    await delta.endAsync();
    const offline = await eventually(async () => {
      const status = await statusOf('delta');
      return status?.online === false ? status : undefined;
    });

    expect(online.lastHeard).not.toBeNull();
    expect(offline.lastHeard && online.lastHeard && offline.lastHeard >= online.lastHeard).toBe(true);
  });
});

describe('the host agent’s MQTT link', () => {
  it('subscribes with a fresh password each time, hands over signals, and says when the broker is gone', async () => {
    const own = await startBroker(parts);
    const ownDetach = parts.embeddedBroker.attach((topic, payload) => own.publish(topic, payload));
    const signals: unknown[] = [];
    let lost = '';
    const link = new MqttSignalLink({
      clientId: 'beta',
      password: () => connectPassword(signingKeyOf('beta', keys.get('beta') as NodeKeys)),
    });
    const channel = { url: own.url, username: 'beta', topic: signalTopic('beta') };
    try {
      await link.open(channel, {
        signal: (signal) => signals.push(signal),
        lost: (reason) => (lost = reason),
      });
      await parts.signalPublisher.publish('beta', { revision: 4, etag: '"4-b"' });
      await settle();
      await link.close();
      await link.open(channel, {
        signal: (signal) => signals.push(signal),
        lost: (reason) => (lost = reason),
      });
      await settle();
      ownDetach();
      await own.stop();
      await settle();
    } finally {
      ownDetach();
      await link.close();
    }

    expect(signals).toEqual([
      { revision: 4, etag: '"4-b"' },
      { revision: 4, etag: '"4-b"' },
    ]);
    expect(lost).not.toBe('');
  });
});
