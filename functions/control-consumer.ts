import { makeDynamoDBClient } from '../lib/adapters/aws-clients.ts';
import { DynamoDBModuleVersions } from '../lib/adapters/dynamodb/mesh-module-versions.ts';
import { makePushFlow } from '../lib/adapters/stepfunctions/push-flow.ts';
import { createControlConsumerHandler } from '../lib/api/handlers/control-consumer.ts';
import { productionConsumerDeps, publishLostMetrics } from '../lib/api/handlers/control-consumer-deps.ts';
import { readConfig } from '../lib/config.ts';

const config = readConfig();
export const handler = createControlConsumerHandler(
  productionConsumerDeps(config, {
    moduleVersions: new DynamoDBModuleVersions({
      client: makeDynamoDBClient(config),
      tableName: config.inventoryTable,
    }),
    pushFlow: makePushFlow(config),
  }),
  publishLostMetrics,
);
