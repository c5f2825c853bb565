import { functionSpecs } from '../server/functions/table.ts';
import { makePollerSQSClient, startEventSource } from './event-source.ts';
import type { LocalService } from './services.ts';

/** The control queue's consumer on the local runtime: the manifest's queue function, fed by the Lambda-like event source. */
export const controlEventSource: LocalService = {
  name: 'the control queue consumer',
  async start(parts) {
    const consumer = functionSpecs.find((spec) => spec.trigger === 'queue');
    if (consumer?.trigger !== 'queue') throw new Error('lib/server/functions/table.ts has no queue function');
    const sqs = makePollerSQSClient(parts.config);
    const running = startEventSource({
      queueUrl: parts.config.controlQueueUrl,
      sqs,
      handler: consumer.handler(parts),
      functionName: consumer.name,
    });
    return {
      async stop() {
        await running.stop();
        sqs.destroy();
      },
    };
  },
};
