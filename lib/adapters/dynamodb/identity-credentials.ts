import { BatchGetItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { IdentityStoreUnavailableError } from '../../core/host-identity/errors.ts';
import type { NodeCredential, NodeCredentialReader, NodeKeyRecord } from '../../core/host-identity/ports.ts';
import { fromItem } from './identity-codec.ts';
import { identityKeyItemKey } from './identity-keys.ts';
import { rethrowStoreFault } from './identity-store-faults.ts';
import { enrolmentItemKey } from './keys.ts';

/**
 * Reads, in one BatchGetItem round trip, the identity table's record of one node key and the
 * inventory's enrolment item (whose `thumbprint` is set only by the spend). The verifier
 * accepts the key only when the two agree.
 */
export class DynamoDBNodeCredentialReader implements NodeCredentialReader {
  private readonly client: DynamoDBClient;
  private readonly identityTable: string;
  private readonly inventoryTable: string;

  constructor(options: { client: DynamoDBClient; identityTable: string; inventoryTable: string }) {
    this.client = options.client;
    this.identityTable = options.identityTable;
    this.inventoryTable = options.inventoryTable;
  }

  async readCredential(node: string, thumbprint: string): Promise<NodeCredential> {
    const identityKey = identityKeyItemKey(node, thumbprint);
    const enrolmentKey = enrolmentItemKey(node);
    let request: Record<string, { Keys: Array<Record<string, { S: string }>>; ConsistentRead: boolean }> = {
      [this.identityTable]: { Keys: [asKey(identityKey)], ConsistentRead: true },
      [this.inventoryTable]: { Keys: [asKey(enrolmentKey)], ConsistentRead: true },
    };
    const found: Record<string, Record<string, unknown>[]> = {};
    try {
      // BatchGetItem may hand keys back unprocessed under load; ask for those again.
      for (let attempt = 0; attempt < 5 && Object.keys(request).length > 0; attempt += 1) {
        const answer = await this.client.send(new BatchGetItemCommand({ RequestItems: request }));
        for (const [table, items] of Object.entries(answer.Responses ?? {})) {
          found[table] = [...(found[table] ?? []), ...items.map((item) => fromItem(item))];
        }
        request = (answer.UnprocessedKeys ?? {}) as typeof request;
      }
    } catch (error) {
      rethrowStoreFault(error, (cause) => new IdentityStoreUnavailableError({ cause }));
    }
    if (Object.keys(request).length > 0) throw new IdentityStoreUnavailableError({});
    const key = found[this.identityTable]?.[0] as (NodeKeyRecord & Record<string, unknown>) | undefined;
    const enrolment = found[this.inventoryTable]?.[0] as { thumbprint?: string } | undefined;
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

const asKey = (key: { pk: string; sk: string }) => ({ pk: { S: key.pk }, sk: { S: key.sk } });
