import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { nodeEntry } from '../../core/audit/record.ts';
import { EnrolmentMovedError } from '../../core/enrolment/errors.ts';
import type { EnrolmentRecord, KeyRotationStore, KeySwitch } from '../../core/enrolment/ports.ts';
import { askStore } from '../../core/unavailable.ts';
import { type AuditedStoreOptions, AuditedTableStore } from '../audit/audit-trail.ts';
import { enrolledKeyItemKey, enrolmentItemKey, tokenItemKey } from '../dynamodb/keys.ts';

/**
 * The enrolment's side of a key rotation, on the inventory's `enrolment` and `token` items
 * (token-store.ts) and the identity table's `enrolled` item (keys.ts), which host routes verify
 * against: read the enrolment strongly, then switch all three from the old key to the new one in
 * one transaction. The conditions are each naming the old key (the token: spent by its presenter,
 * under the same token id); a failed one answers the enrolment as it was.
 */
const enrolledWithOldKey = 'thumbprint = :fromThumbprint AND presenter = :fromPresenter';
const spentByOldPresenter = 'tokenId = :tokenId AND spentBy = :fromPresenter';
const verifiedWithOldKey = 'thumbprint = :fromThumbprint';

const store = 'the inventory table';

export class DynamoDBKeyRotation extends AuditedTableStore implements KeyRotationStore {
  readonly #identityTable: string;

  /** `tableName` is the inventory; `identityTable` holds the `enrolled` item. */
  constructor(options: AuditedStoreOptions & { readonly identityTable: string }) {
    super(options);
    this.#identityTable = options.identityTable;
  }

  async readEnrolment(node: string): Promise<EnrolmentRecord | undefined> {
    const { Item } = await askStore(store, () =>
      this.client.send(
        new GetCommand({ TableName: this.tableName, Key: enrolmentItemKey(node), ConsistentRead: true }),
      ),
    );
    if (!Item || typeof Item.thumbprint !== 'string') return undefined;
    return {
      thumbprint: Item.thumbprint,
      presenter: String(Item.presenter),
      tokenId: String(Item.tokenId),
    };
  }

  async switchKeys(change: KeySwitch): Promise<void> {
    const values = {
      ':fromThumbprint': change.from.thumbprint,
      ':fromPresenter': change.from.presenter,
      ':toThumbprint': change.to.thumbprint,
      ':toPresenter': change.to.presenter,
      ':rotatedAt': change.rotatedAt,
      ':toSealingKey': { kty: 'OKP', crv: 'X25519', x: change.to.sealingKey.x },
    };
    // The host's own act, proven by the key it replaces: that key is the principal.
    const entry = nodeEntry(
      { ...change.by, principal: `key:${change.from.thumbprint}` },
      'node.keys.rotate',
      change.node,
      {
        details: { thumbprint: change.to.thumbprint },
      },
    );
    const failed = await this.audit.transact(
      store,
      [
        {
          Update: {
            TableName: this.tableName,
            Key: enrolmentItemKey(change.node),
            UpdateExpression:
              'SET thumbprint = :toThumbprint, presenter = :toPresenter, sealingKey = :toSealingKey, rotatedAt = :rotatedAt',
            ConditionExpression: enrolledWithOldKey,
            ExpressionAttributeValues: values,
          },
        },
        {
          Update: {
            TableName: this.tableName,
            Key: tokenItemKey(change.node),
            UpdateExpression:
              'SET thumbprint = :toThumbprint, spentBy = :toPresenter, rotatedAt = :rotatedAt',
            ConditionExpression: spentByOldPresenter,
            ExpressionAttributeValues: {
              ':tokenId': change.tokenId,
              ':fromPresenter': change.from.presenter,
              ':toThumbprint': change.to.thumbprint,
              ':toPresenter': change.to.presenter,
              ':rotatedAt': change.rotatedAt,
            },
          },
        },
        {
          Update: {
            TableName: this.#identityTable,
            Key: enrolledKeyItemKey(change.node),
            UpdateExpression: 'SET thumbprint = :toThumbprint, rotatedAt = :rotatedAt',
            ConditionExpression: verifiedWithOldKey,
            ExpressionAttributeValues: {
              ':fromThumbprint': change.from.thumbprint,
              ':toThumbprint': change.to.thumbprint,
              ':rotatedAt': change.rotatedAt,
            },
          },
        },
      ],
      entry,
    );
    if (!failed) return;
    const current = failed[0]?.old ?? (await this.#enrolmentNow(change.node));
    throw new EnrolmentMovedError(
      current && typeof current.thumbprint === 'string'
        ? { thumbprint: current.thumbprint, presenter: String(current.presenter) }
        : undefined,
    );
  }

  async #enrolmentNow(node: string) {
    const enrolment = await this.readEnrolment(node);
    return enrolment ? { thumbprint: enrolment.thumbprint, presenter: enrolment.presenter } : undefined;
  }
}
