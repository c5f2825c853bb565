import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import { IdentityStoreUnavailableError } from '../../core/host-identity/errors.ts';
import type { ProofReplayGuard } from '../../core/host-identity/ports.ts';
import { rethrowStoreFault } from './identity-store-faults.ts';

/**
 * Remembers each proof's jti in the inventory table with a conditional put, so a replayed
 * proof is refused on any Lambda instance.
 *
 * Item: pk `proof#<node>#<jti>`, sk `proof`, `expiresAt` (epoch seconds, the table's TTL
 * attribute). Kept outside the node's partition so `mesh status`'s per-node Query never reads
 * them. TTL deletes lazily; an item kept past its time only blocks a jti whose proof is stale
 * anyway.
 */
const proofUnseen = 'attribute_not_exists(pk)';

export class DynamoDBProofReplayGuard implements ProofReplayGuard {
  private readonly client: DynamoDBClient;
  private readonly tableName: string;

  constructor(options: { client: DynamoDBClient; tableName: string }) {
    this.client = options.client;
    this.tableName = options.tableName;
  }

  async rememberOnce(node: string, jti: string, forgetAfterEpochSeconds: number): Promise<boolean> {
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.tableName,
          Item: {
            pk: { S: `proof#${node}#${jti}` },
            sk: { S: 'proof' },
            expiresAt: { N: String(forgetAfterEpochSeconds) },
          },
          ConditionExpression: proofUnseen,
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      rethrowStoreFault(error, (cause) => new IdentityStoreUnavailableError({ cause }));
    }
  }
}
