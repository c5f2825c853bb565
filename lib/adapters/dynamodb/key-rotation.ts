import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { EnrolmentMovedError } from '../../core/enrolment/errors.ts';
import type { EnrolmentRecord, KeyRotationStore, KeySwitch } from '../../core/enrolment/ports.ts';
import { askStore } from '../../core/unavailable.ts';
import { enrolmentItemKey, tokenItemKey } from './keys.ts';
import { TableStore, transact } from './requests.ts';

/**
 * The inventory's side of a key rotation, on the `enrolment` and `token` items of token-store.ts:
 * read the enrolment strongly, then switch both items from the old key to the new one in one
 * transaction. The conditions are the enrolment naming the old key and the token spent by its
 * presenter with the same token id; a failed one answers the enrolment as it was.
 */
const enrolledWithOldKey = 'thumbprint = :fromThumbprint AND presenter = :fromPresenter';
const spentByOldPresenter = 'tokenId = :tokenId AND spentBy = :fromPresenter';

const store = 'the inventory table';

export class DynamoDBKeyRotation extends TableStore implements KeyRotationStore {
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
    };
    const failed = await transact(this.client, store, [
      {
        Update: {
          TableName: this.tableName,
          Key: enrolmentItemKey(change.node),
          UpdateExpression:
            'SET thumbprint = :toThumbprint, presenter = :toPresenter, rotatedAt = :rotatedAt',
          ConditionExpression: enrolledWithOldKey,
          ExpressionAttributeValues: values,
        },
      },
      {
        Update: {
          TableName: this.tableName,
          Key: tokenItemKey(change.node),
          UpdateExpression: 'SET thumbprint = :toThumbprint, spentBy = :toPresenter, rotatedAt = :rotatedAt',
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
    ]);
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
