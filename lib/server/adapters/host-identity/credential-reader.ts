import { BatchGetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { NodeCredential, NodeCredentialReader, NodeKeyRecord } from '../../core/host-identity/ports.ts';
import { askStore, StoreUnavailableError } from '../../core/unavailable.ts';
import { enrolledKeyItemKey, identityKeyItemKey } from '../dynamodb/keys.ts';
import type { Item } from '../dynamodb/requests.ts';

const what = 'reading node keys';

/**
 * Reads, in one BatchGetItem round trip, the identity table's record of one node key
 * (node-key-store.ts) and its `enrolled` item, which names the thumbprint the spend made the
 * node's credential (keys.ts). The verifier accepts the key only when the two agree. Nothing
 * of the inventory is read: the roles of the host routes and the broker's authorizer have no
 * access to it.
 */
export class DynamoDBCredentialReader implements NodeCredentialReader {
  readonly #client: DynamoDBDocumentClient;
  readonly #identityTable: string;

  constructor(options: { readonly client: DynamoDBDocumentClient; readonly identityTable: string }) {
    this.#client = options.client;
    this.#identityTable = options.identityTable;
  }

  async readCredential(node: string, thumbprint: string): Promise<NodeCredential> {
    type Request = Record<string, { Keys: Array<Record<string, unknown>>; ConsistentRead: boolean }>;
    const keyItem = identityKeyItemKey(node, thumbprint);
    const enrolledItem = enrolledKeyItemKey(node);
    let request: Request = {
      [this.#identityTable]: { Keys: [keyItem, enrolledItem], ConsistentRead: true },
    };
    const found: Item[] = [];
    // BatchGetItem may hand keys back unprocessed under load; ask for those again.
    for (let attempt = 0; attempt < 5 && Object.keys(request).length > 0; attempt += 1) {
      const answer = await askStore(what, () =>
        this.#client.send(new BatchGetCommand({ RequestItems: request })),
      );
      found.push(...(answer.Responses?.[this.#identityTable] ?? []));
      request = (answer.UnprocessedKeys ?? {}) as Request;
    }
    if (Object.keys(request).length > 0) throw new StoreUnavailableError(what);
    const key = found.find((item) => item.sk === keyItem.sk) as (NodeKeyRecord & Item) | undefined;
    const enrolled = found.find((item) => item.sk === enrolledItem.sk) as { thumbprint?: string } | undefined;
    return {
      key: key
        ? {
            node: key.node,
            thumbprint: key.thumbprint,
            signingKey: key.signingKey,
            sealingKey: key.sealingKey,
          }
        : undefined,
      enrolledThumbprint: enrolled?.thumbprint,
    };
  }
}
