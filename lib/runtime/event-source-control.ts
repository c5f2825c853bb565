import { makeSQSClient } from '../adapters/aws-clients.ts';
import type { MeshConfig } from '../config.ts';
import { type SqsBatchHandler, startEventSource } from './event-source.ts';
import type { LocalService } from './services.ts';

/**
 * The control queue's consumer on the local runtime: the handler in functions/ (loaded after
 * the runtime has set the environment it reads), fed by the Lambda-like event source.
 */
export const controlEventSource: LocalService = {
  name: 'the control queue consumer',
  async start(config: MeshConfig) {
    const module = (await import(new URL('../../functions/control-consumer.ts', import.meta.url).href)) as {
      handler: SqsBatchHandler;
    };
    const sqs = makeSQSClient(config);
    const running = startEventSource({ queueUrl: config.controlQueueUrl, sqs, handler: module.handler });
    return {
      async stop() {
        await running.stop();
        sqs.destroy();
      },
    };
  },
};
