import { makeDynamoDBClient } from '../../adapters/aws-clients.ts';
import { DynamoDBDeliveryReader } from '../../adapters/dynamodb/delivery-reader.ts';
import { DynamoDBMeshStore } from '../../adapters/dynamodb/mesh-store.ts';
import { makePushFlow } from '../../adapters/stepfunctions/push-flow.ts';
import type { MeshConfig } from '../../config.ts';
import { MeshService } from '../../core/mesh/service.ts';
import type { MeshStore } from '../../core/mesh/store.ts';
import type { DeliveryReader, PushFlow } from '../../core/ports.ts';

/** What the mesh's operator handlers are built from; tests pass their own. */
export type MeshDeps = {
  readonly store: MeshStore;
  readonly service: MeshService;
  readonly pushFlow: PushFlow;
  readonly deliveries: DeliveryReader;
};

export function productionMeshDeps(config: MeshConfig): MeshDeps {
  const client = makeDynamoDBClient(config);
  const store = new DynamoDBMeshStore({ client, tableName: config.inventoryTable });
  return {
    store,
    service: new MeshService({ store }),
    pushFlow: makePushFlow(config),
    deliveries: new DynamoDBDeliveryReader({ client, tableName: config.inventoryTable }),
  };
}
