import { makeDynamoDBClient } from '../lib/adapters/aws-clients.ts';
import { DynamoDBDeliveryReader } from '../lib/adapters/dynamodb/delivery-reader.ts';
import { createHostDeclarationHandler } from '../lib/api/handlers/host-declaration.ts';
import { readConfig } from '../lib/config.ts';

const config = readConfig();

export const handler = createHostDeclarationHandler({
  deliveries: new DynamoDBDeliveryReader({
    client: makeDynamoDBClient(config),
    tableName: config.inventoryTable,
  }),
});
