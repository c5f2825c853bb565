import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { type Actor, nodeEntry } from '../../core/audit/record.ts';
import {
  NodeUnknownError,
  TokenConditionFailedError,
  TokenIssueConflictError,
} from '../../core/enrolment/errors.ts';
import type { ClaimRequest, SpendRequest, TokenRecord, TokenStore } from '../../core/enrolment/ports.ts';
import { askStore } from '../../core/unavailable.ts';
import { type AuditedStoreOptions, AuditedTableStore } from '../audit/audit-trail.ts';
import { enrolledKeyItemKey, enrolmentItemKey, nodeItemKey, tokenItemKey } from '../dynamodb/keys.ts';
import { allOld, conditionFailed, type Item, itemAbsent, itemPresent } from '../dynamodb/requests.ts';

/**
 * Tokens and enrolments in the inventory table.
 *
 * | pk            | sk          | attributes |
 * |---------------|-------------|------------|
 * | `node#<name>` | `token`     | node, tokenId, secretHash (SHA-256 of the secret, never the secret), issuedAt, validUntilMs, replaced (list of {tokenId, secretHash}, newest first), claimedBy, claimedAt, leaseUntilMs, spentBy, spentAt, thumbprint, revokedAt |
 * | `node#<name>` | `enrolment` | node, enrolledAt, thumbprint (the node's signing key), sealingKey (its public X25519 JWK, which provisions are sealed to), presenter, tokenId: written by the spend, moved by a key rotation |
 *
 * The spend also puts the identity table's `enrolled` item (keys.ts: node, thumbprint,
 * enrolledAt), in the same transaction, so the host routes can verify from that table alone.
 *
 * Access patterns: issue = TransactWrite(ConditionCheck node exists, Put token if unchanged
 * since read); claim = conditional UpdateItem answering ALL_NEW; spend = TransactWrite(conditional
 * Update token, Put enrolment, Put the identity table's enrolled item); revoke = TransactWrite(conditional
 * Update token), then the token read. Issue, spend and revoke each carry their audit record
 * (audit-trail.ts) in the same transaction. Every condition is built from
 * the named parts below; a failed one becomes TokenConditionFailedError carrying the item as it
 * was.
 */
const nodeExists = itemPresent;
const tokenExists = itemPresent;
const tokenAbsent = itemAbsent;
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

const store = 'the inventory table';

export class DynamoDBTokenStore extends AuditedTableStore implements TokenStore {
  readonly #identityTable: string;

  /** `tableName` is the inventory; `identityTable` takes the spend's `enrolled` item. */
  constructor(options: AuditedStoreOptions & { readonly identityTable: string }) {
    super(options);
    this.#identityTable = options.identityTable;
  }

  async read(node: string): Promise<TokenRecord | undefined> {
    const { Item } = await askStore(store, () =>
      this.client.send(
        new GetCommand({ TableName: this.tableName, Key: tokenItemKey(node), ConsistentRead: true }),
      ),
    );
    return Item ? tokenFrom(Item) : undefined;
  }

  async issue(token: TokenRecord, previous: TokenRecord | undefined, by: Actor): Promise<void> {
    const entry = nodeEntry(by, 'token.issue', token.node, {
      details: { validUntil: new Date(token.validUntilMs).toISOString() },
    });
    const failed = await this.audit.transact(
      store,
      [
        {
          ConditionCheck: {
            TableName: this.tableName,
            Key: nodeItemKey(token.node),
            ConditionExpression: nodeExists,
          },
        },
        {
          Put: {
            TableName: this.tableName,
            Item: { ...tokenItemKey(token.node), ...token },
            ConditionExpression: previous ? tokenUnchanged : tokenAbsent,
            ...(previous ? { ExpressionAttributeValues: { ':previousId': previous.tokenId } } : {}),
          },
        },
      ],
      entry,
    );
    if (failed?.[0]) throw new NodeUnknownError(token.node);
    if (failed) throw new TokenIssueConflictError(token.node);
  }

  async revoke(node: string, revokedAt: string, by: Actor): Promise<TokenRecord> {
    const failed = await this.audit.transact(
      store,
      [
        {
          Update: {
            TableName: this.tableName,
            Key: tokenItemKey(node),
            UpdateExpression: 'SET revokedAt = if_not_exists(revokedAt, :revokedAt)',
            ConditionExpression: revokeCondition,
            ExpressionAttributeValues: { ':revokedAt': revokedAt },
          },
        },
      ],
      nodeEntry(by, 'token.revoke', node),
    );
    const token = failed?.[0];
    if (token) throw new TokenConditionFailedError('revoke', token.old ? tokenFrom(token.old) : undefined);
    const revoked = await this.read(node);
    if (!revoked) throw new TokenConditionFailedError('revoke', undefined);
    return revoked;
  }

  async claim(request: ClaimRequest): Promise<TokenRecord> {
    return this.#update('claim', {
      TableName: this.tableName,
      Key: tokenItemKey(request.node),
      UpdateExpression: 'SET claimedBy = :presenter, claimedAt = :claimedAt, leaseUntilMs = :leaseUntil',
      ConditionExpression: claimCondition,
      ExpressionAttributeValues: {
        ':tokenId': request.tokenId,
        ':secretHash': request.secretHash,
        ':presenter': request.presenter,
        ':now': request.nowMs,
        ':leaseUntil': request.leaseUntilMs,
        ':claimedAt': new Date(request.nowMs).toISOString(),
      },
    });
  }

  async spend(request: SpendRequest): Promise<void> {
    // The host's own act: its principal is the key it enrols.
    const by = { ...request.by, principal: `key:${request.thumbprint}` };
    const failed = await this.audit.transact(
      store,
      [
        {
          Update: {
            TableName: this.tableName,
            Key: tokenItemKey(request.node),
            UpdateExpression:
              'SET spentBy = :presenter, spentAt = :spentAt, thumbprint = :thumbprint REMOVE leaseUntilMs',
            ConditionExpression: spendCondition,
            ExpressionAttributeValues: {
              ':tokenId': request.tokenId,
              ':presenter': request.presenter,
              ':spentAt': request.enrolledAt,
              ':thumbprint': request.thumbprint,
            },
          },
        },
        {
          Put: {
            TableName: this.tableName,
            Item: {
              ...enrolmentItemKey(request.node),
              node: request.node,
              enrolledAt: request.enrolledAt,
              thumbprint: request.thumbprint,
              sealingKey: { kty: 'OKP', crv: 'X25519', x: request.sealingKey.x },
              presenter: request.presenter,
              tokenId: request.tokenId,
            },
          },
        },
        {
          Put: {
            TableName: this.#identityTable,
            Item: {
              ...enrolledKeyItemKey(request.node),
              node: request.node,
              thumbprint: request.thumbprint,
              enrolledAt: request.enrolledAt,
            },
          },
        },
      ],
      nodeEntry(by, 'node.enrol', request.node, { details: { thumbprint: request.thumbprint } }),
    );
    const token = failed?.[0];
    if (!token) return;
    const old = token.old ? tokenFrom(token.old) : await this.read(request.node);
    throw new TokenConditionFailedError('spend', old);
  }

  /** A conditional update of the token item answering the item as it is after; the old one if it did not hold. */
  async #update(step: string, input: ConstructorParameters<typeof UpdateCommand>[0]): Promise<TokenRecord> {
    try {
      const { Attributes } = await askStore(store, () =>
        this.client.send(new UpdateCommand({ ...input, ReturnValues: 'ALL_NEW', ...allOld })),
      );
      return tokenFrom(Attributes ?? {});
    } catch (error) {
      const failed = conditionFailed(error);
      if (!failed) throw error;
      throw new TokenConditionFailedError(step, failed.old ? tokenFrom(failed.old) : undefined, {
        cause: error,
      });
    }
  }
}

function tokenFrom(item: Item): TokenRecord {
  const optional = <K extends string>(name: K) =>
    item[name] === undefined ? {} : ({ [name]: item[name] } as Record<K, never>);
  return {
    node: item.node as string,
    tokenId: item.tokenId as string,
    secretHash: item.secretHash as string,
    issuedAt: item.issuedAt as string,
    validUntilMs: item.validUntilMs as number,
    replaced: (item.replaced as Array<{ tokenId: string; secretHash: string }> | undefined) ?? [],
    ...optional('claimedBy'),
    ...optional('claimedAt'),
    ...optional('leaseUntilMs'),
    ...optional('spentBy'),
    ...optional('spentAt'),
    ...optional('thumbprint'),
    ...optional('revokedAt'),
  };
}
