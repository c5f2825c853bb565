import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { ProofReplayGuard } from '../../core/host-identity/ports.ts';
import { askStore } from '../../core/unavailable.ts';
import { allOld, conditionFailed, itemAbsent, TableStore } from '../dynamodb/requests.ts';

/**
 * Remembers each proof's jti in the inventory table with a conditional put, so a replayed
 * proof is refused on any Lambda instance.
 *
 * Item: pk `proof#<node>#<jti>`, sk `proof`, `expiresAt` (epoch seconds, the table's TTL
 * attribute). Kept outside the node's partition so `mesh status`'s per-node Query never reads
 * them. TTL deletes lazily; an item kept past its time only blocks a jti whose proof is stale
 * anyway.
 */
const proofUnseen = itemAbsent;

/** The partition keys of proof items; `proofs:write` grants PutItem on these only. */
export const proofItemsLeadingKey = 'proof#*';

export class DynamoDBProofReplayGuard extends TableStore implements ProofReplayGuard {
  async rememberOnce(node: string, jti: string, forgetAfterEpochSeconds: number): Promise<boolean> {
    try {
      await askStore('the inventory table', () =>
        this.client.send(
          new PutCommand({
            TableName: this.tableName,
            Item: { pk: `proof#${node}#${jti}`, sk: 'proof', expiresAt: forgetAfterEpochSeconds },
            ConditionExpression: proofUnseen,
            ...allOld,
          }),
        ),
      );
      return true;
    } catch (error) {
      if (conditionFailed(error)) return false;
      throw error;
    }
  }
}
