import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Delivery, DeliveryReader } from '../../core/push/ports.ts';
import { askStore, StoreUnavailableError } from '../../core/unavailable.ts';
import { readParts } from '../dynamodb/declaration-parts.ts';
import { deliveryFrom, deliveryKey, sentFrom } from '../dynamodb/mesh-items.ts';
import { TableStore } from '../dynamodb/requests.ts';

/** Heads read again when a newer send removed the parts of the one read (declaration-parts.ts). */
const headReads = 3;

/**
 * Reads what a node was last sent (the `delivery` item of mesh-items.ts), for
 * `GET /hosts/{node}/declaration` and `GET /nodes/{node}/declaration`. One strongly consistent
 * GetItem: a host that was just pushed to must not be told it is up to date. A declaration kept
 * in parts is joined from them after the head, each part read strongly too; when a part is gone
 * or the bytes are not the digest's, a newer send moved the head meanwhile and it is read again,
 * so the answer is always one whole declaration with its own ETag, or "try again".
 */
export class DynamoDBDeliveryReader extends TableStore implements DeliveryReader {
  async readDelivery(
    node: string,
    options: { readonly known?: (etag: string) => boolean } = {},
  ): Promise<Delivery | undefined> {
    for (let read = 0; read < headReads; read += 1) {
      const head = await this.#head(node);
      if (!head) return undefined;
      const delivery = deliveryFrom(head, null);
      if (options.known?.(delivery.etag)) return delivery;
      const { parts, revision, digest } = sentFrom(head);
      if (parts === undefined) return deliveryFrom(head);
      const where = { client: this.client, tableName: this.tableName, node };
      const canonical = await readParts(where, { revision, digest }, parts);
      if (canonical !== undefined) return deliveryFrom(head, canonical);
    }
    throw new StoreUnavailableError(`reading ${node}'s declaration in parts`, {
      cause: new Error(`its parts changed under ${headReads} reads`),
    });
  }

  async #head(node: string) {
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
    return Item;
  }
}
