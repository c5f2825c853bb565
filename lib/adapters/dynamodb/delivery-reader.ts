import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Delivery, DeliveryReader } from '../../core/ports.ts';
import { askStore } from '../../core/unavailable.ts';
import { deliveryFrom, deliveryKey } from './mesh-items.ts';
import { TableStore } from './requests.ts';

/**
 * Reads what a node was last sent (the `delivery` item of mesh-items.ts), for
 * `GET /hosts/{node}/declaration` and `GET /nodes/{node}/declaration`. One strongly consistent
 * GetItem: a host that was just pushed to must not be told it is up to date.
 */
export class DynamoDBDeliveryReader extends TableStore implements DeliveryReader {
  async readDelivery(node: string): Promise<Delivery | undefined> {
    const { Item } = await askStore('the inventory table', () =>
      this.client.send(
        new GetCommand({
          TableName: this.tableName,
          Key: deliveryKey(node),
          ConsistentRead: true,
          ReturnConsumedCapacity: 'TOTAL',
        }),
      ),
    );
    return Item ? deliveryFrom(Item) : undefined;
  }
}
