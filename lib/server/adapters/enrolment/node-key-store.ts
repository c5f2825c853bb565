import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { NodeKeyStore } from '../../core/enrolment/ports.ts';
import type { NodeKeyRecord } from '../../core/host-identity/ports.ts';
import { askStore } from '../../core/unavailable.ts';
import { identityKeyItemKey, nodePartition } from '../dynamodb/keys.ts';
import { conditionFailed, queryAll, TableStore } from '../dynamodb/requests.ts';

/**
 * Node keys in the identity table:
 *
 * | pk            | sk                 | what it holds |
 * |---------------|--------------------|---------------|
 * | `node#<name>` | `key#<thumbprint>` | one presenter's public keys: `signingKey` (Ed25519 JWK, the host's proof key), `sealingKey` (X25519 JWK, which provisions are sealed to once its enrolment completes; the inventory's `enrolment` item keeps a copy for the mint), `thumbprint`, `presenter`, `storedAt`, `tokenId` (the token they were presented with) |
 *
 * A key item is written (overwritten) by the claimant before the spend; it is a credential only
 * while the inventory's enrolment item (written by the spend) names its thumbprint. After the
 * spend the node's other key items put for that token or the ones it replaced are pruned (one
 * conditional DeleteItem each, on `tokenId`), so the table holds the winner's keys, and a key
 * put for a newer token is never removed by an older enrolment's late prune.
 */
const putForNoToken = 'attribute_not_exists(tokenId)';
const putForOneOf = (placeholders: readonly string[]) => `tokenId IN (${placeholders.join(', ')})`;

const store = 'the identity table';

export class DynamoDBNodeKeyStore extends TableStore implements NodeKeyStore {
  async putKeys(
    record: NodeKeyRecord & { presenter: string; storedAt: string; tokenId: string },
  ): Promise<void> {
    await askStore(store, () =>
      this.client.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            ...identityKeyItemKey(record.node, record.thumbprint),
            node: record.node,
            thumbprint: record.thumbprint,
            signingKey: record.signingKey,
            sealingKey: record.sealingKey,
            presenter: record.presenter,
            storedAt: record.storedAt,
            tokenId: record.tokenId,
          },
        }),
      ),
    );
  }

  /**
   * A key item may be pruned when it was put for one of the tokens being pruned for (the spent
   * token, or one it replaced), or carries no token mark. BatchWriteItem cannot carry a
   * condition, and the mark may change between the query and the delete (the same keys put
   * again for a newer token): one conditional delete each.
   */
  async pruneOtherKeys(node: string, keep: string, tokenIds: readonly string[]): Promise<void> {
    const keepSk = identityKeyItemKey(node, keep).sk;
    const placeholders = tokenIds.map((_, index) => `:token${index}`);
    const values = Object.fromEntries(tokenIds.map((id, index) => [`:token${index}`, id]));
    const prunable = tokenIds.length > 0 ? `${putForNoToken} OR ${putForOneOf(placeholders)}` : putForNoToken;
    const items = await queryAll(this.client, store, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :key)',
      ExpressionAttributeValues: { ':pk': nodePartition(node), ':key': 'key#' },
      ProjectionExpression: 'pk, sk, tokenId',
      ConsistentRead: true,
    });
    for (const item of items) {
      const mark = item.tokenId as string | undefined;
      if (item.sk === keepSk || (mark !== undefined && !tokenIds.includes(mark))) continue;
      try {
        await askStore(store, () =>
          this.client.send(
            new DeleteCommand({
              TableName: this.tableName,
              Key: { pk: item.pk, sk: item.sk },
              ConditionExpression: prunable,
              ...(tokenIds.length > 0 ? { ExpressionAttributeValues: values } : {}),
            }),
          ),
        );
      } catch (error) {
        if (!conditionFailed(error)) throw error;
      }
    }
  }
}
