import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  TransactionCanceledException,
  TransactWriteItemsCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import {
  EnrolmentStoreUnavailableError,
  NodeUnknownError,
  TokenConditionFailedError,
  TokenIssueConflictError,
} from '../../core/enrolment/errors.ts';
import type { ClaimRequest, SpendRequest, TokenRecord, TokenStore } from '../../core/enrolment/ports.ts';
import { fromItem, toItem } from './identity-codec.ts';
import { rethrowStoreFault } from './identity-store-faults.ts';
import { enrolmentItemKey, nodeItemKey, tokenItemKey } from './keys.ts';

/**
 * Tokens and enrolments in the inventory table.
 *
 * | pk            | sk          | attributes |
 * |---------------|-------------|------------|
 * | `node#<name>` | `token`     | node, tokenId, secretHash (SHA-256 of the secret, never the secret), issuedAt, validUntilMs, replaced (list of {tokenId, secretHash}, newest first), claimedBy, claimedAt, leaseUntilMs, spentBy, spentAt, thumbprint, revokedAt |
 * | `node#<name>` | `enrolment` | node, enrolledAt, thumbprint (the node's signing key), presenter, tokenId: written only by the spend |
 *
 * Access patterns: issue = TransactWrite(ConditionCheck node exists, Put token if unchanged
 * since read); claim = conditional UpdateItem answering ALL_NEW; spend = TransactWrite(conditional Update token,
 * Put enrolment); revoke = conditional UpdateItem. Every condition is built from the named
 * parts below; a failed one becomes TokenConditionFailedError carrying the item as it was. A
 * transaction cancelled for a race or a throttle (no condition failed) is the store not
 * answering now: EnrolmentStoreUnavailableError, like any other transient fault.
 */
const nodeExists = 'attribute_exists(pk)';
const tokenExists = 'attribute_exists(pk)';
const tokenAbsent = 'attribute_not_exists(pk)';
const tokenUnchanged = 'tokenId = :previousId';
const sameToken = 'tokenId = :tokenId AND secretHash = :secretHash';
const sameTokenId = 'tokenId = :tokenId';
const notSpent = 'attribute_not_exists(spentBy)';
const notRevoked = 'attribute_not_exists(revokedAt)';
const notExpired = 'validUntilMs > :now';
const tokenUnclaimed = 'attribute_not_exists(claimedBy)';
const leaseLapsed = 'leaseUntilMs <= :now';
const leaseLive = 'leaseUntilMs > :now';
const claimedByPresenter = 'claimedBy = :presenter';
/**
 * Expiry ends new claims, not a live one: the claimant whose spend the store did not answer
 * just before the token expired may ask again while its lease lasts. Its claim is renewed, but
 * only ever by the claimant, and the token still cannot go to anyone else.
 */
const stillItsClaim = `(${claimedByPresenter} AND ${leaseLive})`;

export const claimCondition = `${sameToken} AND ${notSpent} AND ${notRevoked} AND (${notExpired} OR ${stillItsClaim}) AND (${tokenUnclaimed} OR ${leaseLapsed} OR ${claimedByPresenter})`;
export const spendCondition = `${sameTokenId} AND ${claimedByPresenter} AND ${notSpent} AND ${notRevoked}`;
const revokeCondition = `${tokenExists} AND ${notSpent}`;

export class DynamoDBTokenStore implements TokenStore {
  private readonly client: DynamoDBClient;
  private readonly tableName: string;

  constructor(options: { client: DynamoDBClient; tableName: string }) {
    this.client = options.client;
    this.tableName = options.tableName;
  }

  async read(node: string): Promise<TokenRecord | undefined> {
    const answer = await this.guard(() =>
      this.client.send(
        new GetItemCommand({
          TableName: this.tableName,
          Key: keyOf(tokenItemKey(node)),
          ConsistentRead: true,
        }),
      ),
    );
    return answer.Item ? tokenFrom(answer.Item) : undefined;
  }

  async issue(token: TokenRecord, previous: TokenRecord | undefined): Promise<void> {
    try {
      await this.client.send(
        new TransactWriteItemsCommand({
          TransactItems: [
            {
              ConditionCheck: {
                TableName: this.tableName,
                Key: keyOf(nodeItemKey(token.node)),
                ConditionExpression: nodeExists,
              },
            },
            {
              Put: {
                TableName: this.tableName,
                Item: toItem({ ...tokenItemKey(token.node), ...token }),
                ConditionExpression: previous ? tokenUnchanged : tokenAbsent,
                ...(previous
                  ? { ExpressionAttributeValues: { ':previousId': { S: previous.tokenId } } }
                  : {}),
              },
            },
          ],
        }),
      );
    } catch (error) {
      const failed = failedConditions(error);
      if (failed[0]) throw new NodeUnknownError(token.node, { cause: error });
      if (failed[1]) throw new TokenIssueConflictError(token.node, { cause: error });
      rethrowStoreFault(error, (cause) => new EnrolmentStoreUnavailableError({ cause }));
    }
  }

  async revoke(node: string, revokedAt: string): Promise<TokenRecord> {
    try {
      const answer = await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: keyOf(tokenItemKey(node)),
          UpdateExpression: 'SET revokedAt = if_not_exists(revokedAt, :revokedAt)',
          ConditionExpression: revokeCondition,
          ExpressionAttributeValues: { ':revokedAt': { S: revokedAt } },
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return tokenFrom(answer.Attributes ?? {});
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        throw new TokenConditionFailedError('revoke', error.Item ? tokenFrom(error.Item) : undefined, {
          cause: error,
        });
      }
      rethrowStoreFault(error, (cause) => new EnrolmentStoreUnavailableError({ cause }));
    }
  }

  async claim(request: ClaimRequest): Promise<TokenRecord> {
    try {
      const answer = await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: keyOf(tokenItemKey(request.node)),
          UpdateExpression: 'SET claimedBy = :presenter, claimedAt = :claimedAt, leaseUntilMs = :leaseUntil',
          ConditionExpression: claimCondition,
          ExpressionAttributeValues: {
            ':tokenId': { S: request.tokenId },
            ':secretHash': { S: request.secretHash },
            ':presenter': { S: request.presenter },
            ':now': { N: String(request.nowMs) },
            ':leaseUntil': { N: String(request.leaseUntilMs) },
            ':claimedAt': { S: new Date(request.nowMs).toISOString() },
          },
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return tokenFrom(answer.Attributes ?? {});
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        throw new TokenConditionFailedError('claim', error.Item ? tokenFrom(error.Item) : undefined, {
          cause: error,
        });
      }
      rethrowStoreFault(error, (cause) => new EnrolmentStoreUnavailableError({ cause }));
    }
  }

  async spend(request: SpendRequest): Promise<void> {
    try {
      await this.client.send(
        new TransactWriteItemsCommand({
          TransactItems: [
            {
              Update: {
                TableName: this.tableName,
                Key: keyOf(tokenItemKey(request.node)),
                UpdateExpression:
                  'SET spentBy = :presenter, spentAt = :spentAt, thumbprint = :thumbprint REMOVE leaseUntilMs',
                ConditionExpression: spendCondition,
                ExpressionAttributeValues: {
                  ':tokenId': { S: request.tokenId },
                  ':presenter': { S: request.presenter },
                  ':spentAt': { S: request.enrolledAt },
                  ':thumbprint': { S: request.thumbprint },
                },
                ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
              },
            },
            {
              Put: {
                TableName: this.tableName,
                Item: toItem({
                  ...enrolmentItemKey(request.node),
                  node: request.node,
                  enrolledAt: request.enrolledAt,
                  thumbprint: request.thumbprint,
                  presenter: request.presenter,
                  tokenId: request.tokenId,
                }),
              },
            },
          ],
        }),
      );
    } catch (error) {
      const failed = failedConditions(error);
      if (failed[0]) {
        const old = failed[0].Item ? tokenFrom(failed[0].Item) : await this.read(request.node);
        throw new TokenConditionFailedError('spend', old, { cause: error });
      }
      rethrowStoreFault(error, (cause) => new EnrolmentStoreUnavailableError({ cause }));
    }
  }

  private async guard<T>(send: () => Promise<T>): Promise<T> {
    try {
      return await send();
    } catch (error) {
      rethrowStoreFault(error, (cause) => new EnrolmentStoreUnavailableError({ cause }));
    }
  }
}

/** The transaction items whose condition failed, by index; empty for any other error. */
function failedConditions(error: unknown): Array<{ Item?: Record<string, AttributeValue> } | undefined> {
  if (!(error instanceof TransactionCanceledException)) return [];
  return (error.CancellationReasons ?? []).map((reason) =>
    reason.Code === 'ConditionalCheckFailed' ? { ...(reason.Item ? { Item: reason.Item } : {}) } : undefined,
  );
}

const keyOf = (key: { pk: string; sk: string }) => ({ pk: { S: key.pk }, sk: { S: key.sk } });

function tokenFrom(item: Record<string, AttributeValue>): TokenRecord {
  const plain = fromItem(item) as Record<string, unknown>;
  const optional = <K extends string>(name: K) =>
    plain[name] === undefined ? {} : ({ [name]: plain[name] } as Record<K, never>);
  return {
    node: plain.node as string,
    tokenId: plain.tokenId as string,
    secretHash: plain.secretHash as string,
    issuedAt: plain.issuedAt as string,
    validUntilMs: plain.validUntilMs as number,
    replaced: (plain.replaced as Array<{ tokenId: string; secretHash: string }> | undefined) ?? [],
    ...optional('claimedBy'),
    ...optional('claimedAt'),
    ...optional('leaseUntilMs'),
    ...optional('spentBy'),
    ...optional('spentAt'),
    ...optional('thumbprint'),
    ...optional('revokedAt'),
  };
}
