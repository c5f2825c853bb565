import { type DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import type { Delivery, DeliveryReader } from '../../core/ports.ts';
import { type DeliveryItem, deliveryFromItem, deliveryItemKey } from './mesh-delivery-item.ts';

/**
 * Reads what a node was last sent (pk `node#<name>`, sk `delivery`), for the host route
 * `GET /hosts/{node}/declaration`. One strongly consistent GetItem: a host that was just
 * pushed to must not be told it is up to date.
 */
export class DynamoDBDeliveryReader implements DeliveryReader {
  readonly #client: DynamoDBClient;
  readonly #tableName: string;

  constructor(options: { readonly client: DynamoDBClient; readonly tableName: string }) {
    this.#client = options.client;
    this.#tableName = options.tableName;
  }

  async readDelivery(node: string): Promise<Delivery | undefined> {
    const { Item } = await this.#client.send(
      new GetItemCommand({
        TableName: this.#tableName,
        Key: deliveryItemKey(node),
        ConsistentRead: true,
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    return Item ? deliveryFromItem(Item as DeliveryItem) : undefined;
  }
}
