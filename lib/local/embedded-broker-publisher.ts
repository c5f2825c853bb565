import { signalPayload } from '../server/adapters/signal/iot-data-publisher.ts';
import { type NodeSignal, signalTopic } from '../server/core/signal/channel.ts';
import { BrokerAwayError } from '../server/core/signal/errors.ts';
import type { SignalPublisher } from '../server/core/signal/ports.ts';
import { recordCall } from './call-record.ts';

/** How the embedded broker takes a retained QoS 1 message from the control plane itself. */
export type RetainedPublish = (topic: string, payload: Buffer) => Promise<void>;

/**
 * The signal on the local runtime: handed in-process to the embedded broker
 * (lib/runtime/broker/), which attaches itself when it starts and detaches when it stops.
 * While it is away a publish fails, as an unreachable IoT endpoint would: the push counts it
 * and goes on.
 */
export class EmbeddedBrokerPublisher implements SignalPublisher {
  #broker: RetainedPublish | undefined;

  /** The broker takes the signals from now on; the returned function lets it go again. */
  attach(broker: RetainedPublish): () => void {
    this.#broker = broker;
    return () => {
      if (this.#broker === broker) this.#broker = undefined;
    };
  }

  async publish(node: string, signal: NodeSignal): Promise<void> {
    const broker = this.#broker;
    if (!broker) throw new BrokerAwayError('the embedded broker is not running');
    // the IoT data plane's retained Publish, on AWS
    recordCall({ stand: 'iot:Publish', topic: signalTopic(node), retain: true });
    await broker(signalTopic(node), signalPayload(signal));
  }
}
