import { BatchGetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { NodeCredential, NodeCredentialReader, NodeKeyRecord } from '../../core/host-identity/ports.ts';
import { askStore, StoreUnavailableError } from '../../core/unavailable.ts';
import { enrolmentItemKey, identityKeyItemKey } from './keys.ts';
import type { Item } from './requests.ts';

const what = 'reading node keys';

/**
 * Reads, in one BatchGetItem round trip, the identity table's record of one node key
 * (node-key-store.ts) and the inventory's enrolment item (token-store.ts; its `thumbprint` is
 * set only by the spend). The verifier accepts the key only when the two agree.
 */
export class DynamoDBCredentialReader implements NodeCredentialReader {
  readonly #client: DynamoDBDocumentClient;
  readonly #identityTable: string;
  readonly #inventoryTable: string;

  constructor(options: {
    readonly client: DynamoDBDocumentClient;
    readonly identityTable: string;
    readonly inventoryTable: string;
  }) {
    this.#client = options.client;
    this.#identityTable = options.identityTable;
    this.#inventoryTable = options.inventoryTable;
  }

  async readCredential(node: string, thumbprint: string): Promise<NodeCredential> {
    type Request = Record<string, { Keys: Array<Record<string, unknown>>; ConsistentRead: boolean }>;
    let request: Request = {
      [this.#identityTable]: { Keys: [identityKeyItemKey(node, thumbprint)], ConsistentRead: true },
      [this.#inventoryTable]: { Keys: [enrolmentItemKey(node)], ConsistentRead: true },
    };
    const found: Record<string, Item[]> = {};
    // BatchGetItem may hand keys back unprocessed under load; ask for those again.
    for (let attempt = 0; attempt < 5 && Object.keys(request).length > 0; attempt += 1) {
      const answer = await askStore(what, () =>
        this.#client.send(new BatchGetCommand({ RequestItems: request })),
      );
      for (const [table, items] of Object.entries(answer.Responses ?? {})) {
        found[table] = [...(found[table] ?? []), ...items];
      }
      request = (answer.UnprocessedKeys ?? {}) as Request;
    }
    if (Object.keys(request).length > 0) throw new StoreUnavailableError(what);
    const key = found[this.#identityTable]?.[0] as (NodeKeyRecord & Item) | undefined;
    const enrolment = found[this.#inventoryTable]?.[0] as { thumbprint?: string } | undefined;
    return {
      key: key
        ? {
            node: key.node,
            thumbprint: key.thumbprint,
            signingKey: key.signingKey,
            sealingKey: key.sealingKey,
          }
        : undefined,
      enrolledThumbprint: enrolment?.thumbprint,
    };
  }
}
