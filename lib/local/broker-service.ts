import { join } from 'node:path';
import type { BrokerAuthorizerHandler, BrokerLifecycleHandler } from '../server/functions/spec.ts';
import { functionSpecs } from '../server/functions/table.ts';
import { invocation } from './aws-quotas.ts';
import { asFunction } from './call-record.ts';
import { startEmbeddedBroker } from './embedded-broker.ts';
import type { LocalParts } from './parts.ts';
import type { LocalService } from './services.ts';

/**
 * The embedded MQTT broker on the local runtime, where the configuration's broker URL says
 * (`MESH_MQTT_PORT`, loopback only), guarded by the manifest's broker authorizer and feeding its
 * presence function. While it runs, the push's signals go to it (`parts.embeddedBroker`).
 */
export const embeddedBrokerService: LocalService = {
  name: 'the embedded MQTT broker',
  async start(parts: LocalParts, where = {}) {
    const signal = parts.config.signal;
    if (!signal) throw new Error('the configuration names no broker (signal.brokerUrl)');
    const url = new URL(signal.brokerUrl);
    const broker = await startEmbeddedBroker({
      host: url.hostname,
      port: Number(url.port),
      authorize: handlerOf<BrokerAuthorizerHandler>('broker-authorizer', parts),
      lifecycle: handlerOf<BrokerLifecycleHandler>('broker-lifecycle', parts),
      scope: { partition: signal.partition, region: parts.config.region, accountId: signal.accountId },
      log: parts.log,
      ...(where.dataDir ? { connectedFile: join(where.dataDir, 'broker-connected.json') } : {}),
    });
    const detach = parts.embeddedBroker.attach((topic, payload) => broker.publish(topic, payload));
    return {
      async stop() {
        detach();
        await broker.stop();
      },
    };
  },
};

function handlerOf<H>(trigger: 'broker-authorizer' | 'broker-lifecycle', parts: LocalParts): H {
  const spec = functionSpecs.find((entry) => entry.trigger === trigger);
  if (!spec) throw new Error(`lib/server/functions/table.ts has no ${trigger} function`);
  const handler = spec.handler(parts) as (event: never) => Promise<unknown>;
  return ((event: never) => invocation(spec.name, () => asFunction(spec.name, () => handler(event)))) as H;
}
