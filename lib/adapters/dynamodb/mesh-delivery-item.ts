import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { Delivery } from '../../core/ports.ts';
import { nodePartition } from './keys.ts';

/**
 * The delivery item: pk `node#<name>`, sk `delivery`. What a host fetches, written by send in
 * the same transaction that records the node as sent, so the two never disagree.
 *
 * | attribute   | type | meaning |
 * |-------------|------|---------|
 * | node        | S    | the node's name |
 * | revision    | N    | the sent revision (only grows) |
 * | digest      | S    | SHA-256 hex of the declaration's canonical JSON |
 * | sentAt      | S    | ISO time of the send |
 * | declaration | S    | the declaration, canonical JSON (exactly the bytes the digest is of) |
 */
export type DeliveryItem = Record<string, AttributeValue>;

export const deliveryItemKey = (node: string) => ({ pk: { S: nodePartition(node) }, sk: { S: 'delivery' } });

/** A strong ETag that changes whenever the revision or the content does. */
export const deliveryEtag = (digest: string, revision: number) => `"${revision}-${digest}"`;

export function deliveryItem(delivery: {
  readonly node: string;
  readonly revision: number;
  readonly digest: string;
  readonly sentAt: string;
  readonly canonical: string;
}): DeliveryItem {
  return {
    ...deliveryItemKey(delivery.node),
    node: { S: delivery.node },
    revision: { N: String(delivery.revision) },
    digest: { S: delivery.digest },
    sentAt: { S: delivery.sentAt },
    declaration: { S: delivery.canonical },
  };
}

export function deliveryFromItem(item: DeliveryItem): Delivery {
  const node = item.node?.S ?? '';
  const revision = Number(item.revision?.N ?? '0');
  const digest = item.digest?.S ?? '';
  return {
    node,
    revision,
    digest,
    etag: deliveryEtag(digest, revision),
    sentAt: item.sentAt?.S ?? '',
    declaration: JSON.parse(item.declaration?.S ?? 'null'),
  };
}
