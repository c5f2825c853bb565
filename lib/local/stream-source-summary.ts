import { makeDynamoDBClient } from '../server/adapters/aws-clients.ts';
import { functionSpecs } from '../server/functions/table.ts';
import type { LocalService } from './services.ts';
import { startStreamSource } from './stream-source.ts';

/**
 * The summary's aggregator on the local runtime: the manifest's stream function, fed from the
 * inventory table's stream as Lambda's event source mapping feeds it on AWS.
 */
export const summaryStreamSource: LocalService = {
  name: 'the summary aggregator',
  async start(parts) {
    const aggregator = functionSpecs.find((spec) => spec.trigger === 'stream');
    if (aggregator?.trigger !== 'stream')
      throw new Error('lib/server/functions/table.ts has no stream function');
    const dynamodb = makeDynamoDBClient(parts.config);
    const running = startStreamSource({
      dynamodb,
      config: parts.config,
      tableName: parts.config.inventoryTable,
      handler: aggregator.handler(parts),
      functionName: aggregator.name,
    });
    return {
      async stop() {
        await running.stop();
        dynamodb.destroy();
      },
    };
  },
};
