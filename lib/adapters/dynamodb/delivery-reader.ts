import { type DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Delivery, DeliveryReader } from '../../core/ports.ts';
import { askStore } from '../../core/unavailable.ts';
import { deliveryFrom, deliveryKey } from './mesh-items.ts';

/**
 * Reads what a node was last sent (the `delivery` item of mesh-items.ts), for
 * `GET /hosts/{node}/declaration` and `GET /nodes/{node}/declaration`. One strongly consistent
 * GetItem: a host that was just pushed to must not be told it is up to date.
 */
export class DynamoDBDeliveryReader implements DeliveryReader {
  readonly #client: DynamoDBDocumentClient;
  readonly #table: string;

  constructor(options: { readonly client: DynamoDBDocumentClient; readonly tableName: string }) {
    this.#client = options.client;
    this.#table = options.tableName;
  }

  async readDelivery(node: string): Promise<Delivery | undefined> {
    const { Item } = await askStore('the inventory table', () =>
      this.#client.send(
        new GetCommand({
          TableName: this.#table,
          Key: deliveryKey(node),
          ConsistentRead: true,
          ReturnConsumedCapacity: 'TOTAL',
        }),
      ),
    );
    return Item ? deliveryFrom(Item) : undefined;
  }
}
