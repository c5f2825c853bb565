import { type IoTDataPlaneClient, PublishCommand } from '@aws-sdk/client-iot-data-plane';
import { type NodeSignal, signalTopic } from '../../core/signal/channel.ts';
import type { SignalPublisher } from '../../core/signal/ports.ts';

/**
 * The signal on AWS: one IoT data plane Publish per send, QoS 1 and retained, so a host that
 * connects later still finds the latest on subscribing. The client is built with short timeouts
 * (aws-clients.ts): a broker that does not answer must not hold a push up.
 */
export class IotDataSignalPublisher implements SignalPublisher {
  readonly #client: IoTDataPlaneClient;

  constructor(options: { readonly client: IoTDataPlaneClient }) {
    this.#client = options.client;
  }

  async publish(node: string, signal: NodeSignal): Promise<void> {
    await this.#client.send(
      new PublishCommand({
        topic: signalTopic(node),
        qos: 1,
        retain: true,
        contentType: 'application/json',
        payload: signalPayload(signal),
      }),
    );
  }
}

/** The signal's bytes on the wire: `{"revision":n,"etag":"…"}`. */
export const signalPayload = (signal: NodeSignal) =>
  Buffer.from(JSON.stringify({ revision: signal.revision, etag: signal.etag }));

/** No broker is configured: hosts poll, and a push has nobody to tell. */
export const noBrokerPublisher: SignalPublisher = {
  publish: async () => undefined,
};
