import { connect, type IClientOptions, type MqttClient } from 'mqtt';
import { nodeSignal, type SignalChannel } from '../../../server/core/signal/channel.ts';
import type { SignalHandlers, SignalLink } from './ports.ts';

export type MqttSignalLinkOptions = {
  /** The MQTT client id: the node's name, the only one its policy lets it connect as. */
  readonly clientId: string;
  /** A fresh password for each connect: the proof is spent by the broker's replay guard. */
  readonly password: () => Promise<string>;
  /** @default 10_000 */
  readonly connectTimeoutMs?: number;
  /** How often the client pings while idle; the broker drops it after one and a half of these. @default 60 */
  readonly keepaliveSeconds?: number;
};

/**
 * The node's connection to the broker over MQTT 3.1.1 with the `mqtt` client. Reconnecting is
 * the run loop's job (signal-watch.ts), never the client's: every connect needs a new proof,
 * made asynchronously, and the loop polls while the broker is away. On `mqtts://` (AWS IoT on
 * port 443) TLS names the host (SNI) and offers ALPN `mqtt`.
 */
export class MqttSignalLink implements SignalLink {
  readonly #options: MqttSignalLinkOptions;
  #client: MqttClient | undefined;

  constructor(options: MqttSignalLinkOptions) {
    this.#options = options;
  }

  async open(channel: SignalChannel, handlers: SignalHandlers): Promise<void> {
    await this.close();
    const url = new URL(channel.url);
    const options: IClientOptions = {
      clientId: this.#options.clientId,
      username: channel.username,
      password: await this.#options.password(),
      protocolVersion: 4,
      clean: true,
      reconnectPeriod: 0,
      connectTimeout: this.#options.connectTimeoutMs ?? 10_000,
      keepalive: this.#options.keepaliveSeconds ?? 60,
      // mqtt-packet otherwise keeps a Buffer for each of the 65,536 packet ids (about 7 MB of
      // heap) to write them faster; an agent sends a handful of packets an hour.
      writeCache: false,
      ...(url.protocol === 'mqtts:' ? { ALPNProtocols: ['mqtt'], servername: url.hostname } : {}),
    };
    // Where to connect, given as options: a URL string would go through Node's deprecated url.parse.
    const client = connect({
      ...options,
      protocol: url.protocol === 'mqtts:' ? 'mqtts' : 'mqtt',
      host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
      ...(url.port ? { port: Number(url.port) } : {}),
    });
    this.#client = client;
    let reason = 'the broker closed the connection';
    client.on('error', (error) => {
      reason = errorReason(error);
    });
    try {
      await connected(client);
      client.on('message', (topic, payload) => {
        if (topic !== channel.topic) return;
        const parsed = nodeSignal.safeParse(parseJson(payload.toString('utf8')));
        if (parsed.success) handlers.signal(parsed.data);
      });
      const closedFirst = new Promise<never>((_, reject) =>
        client.once('close', () => reject(new Error(`${reason} while subscribing`))),
      );
      closedFirst.catch(() => undefined);
      const refused = (why: string) =>
        new Error(`the broker refused the subscription to ${channel.topic} (${why})`);
      const subscribed = client.subscribeAsync(channel.topic, { qos: 1 }).catch((error: Error) => {
        throw refused(error.message);
      });
      const [granted] = await Promise.race([subscribed, closedFirst]);
      if (!granted || granted.qos > 2) throw refused(`granted ${granted?.qos}`);
    } catch (error) {
      this.#client = undefined;
      client.end(true);
      throw error;
    }
    client.on('close', () => {
      if (this.#client !== client) return;
      this.#client = undefined;
      client.end(true);
      handlers.lost(reason);
    });
  }

  async close(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    if (client) await client.endAsync();
  }
}

/** Resolves on CONNACK; rejects on a refusal, an error, or a connection closed before it. */
function connected(client: MqttClient): Promise<void> {
  return new Promise((resolve, reject) => {
    const settle = (error?: Error) => {
      client.off('connect', onConnect);
      client.off('error', onError);
      client.off('close', onClose);
      if (error) reject(error);
      else resolve();
    };
    const onConnect = () => settle();
    const onError = (error: Error) => settle(new Error(errorReason(error)));
    const onClose = () => settle(new Error('the connection closed before the broker answered'));
    client.on('connect', onConnect);
    client.on('error', onError);
    client.on('close', onClose);
  });
}

function errorReason(error: Error & { code?: unknown }): string {
  return typeof error.code === 'string' ? `${error.code}: ${error.message}` : error.message;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
