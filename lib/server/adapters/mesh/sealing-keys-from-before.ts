import { type DynamoDBDocumentClient, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type {
  EnrolledKey,
  SealingKeyJwk,
  SealingKeysFromBefore,
} from '../../core/sealing/keys-from-before.ts';
import { sealingKeyOf } from '../../core/sealing/sealed-secret.ts';
import { askStore } from '../../core/unavailable.ts';
import { enrolledKeyItemKey, enrolmentItemKey, identityKeyItemKey } from '../dynamodb/keys.ts';
import { conditionFailed, getItems, scanAll } from '../dynamodb/requests.ts';

const inventory = 'the inventory table';
/** Written once a run has gone through every enrolment (keys-from-before.ts). */
export const upgradeDoneKey = { pk: 'mesh#upgrades', sk: 'sealing-keys-from-before' } as const;
const identity = 'the identity table';

// The named parts of the one condition: the enrolment read is still the one, and nothing wrote a key since.
const namesTheSameKey = 'thumbprint = :thumbprint';
const keepsNoSealingKey = 'attribute_not_exists(sealingKey)';

/**
 * The inventory's `enrolment` items written before the spend kept a sealing key (token-store.ts),
 * and the identity table's `key#<thumbprint>` and `enrolled` items (node-key-store.ts, keys.ts)
 * that hold the key their host enrolled. Listing them is one Scan of the inventory, so this runs
 * once, at an upgrade, never on a request's path; `mesh#upgrades` / `sealing-keys-from-before`
 * says it ran through them all, and a later run reads that item alone.
 */
export class DynamoDBSealingKeysFromBefore implements SealingKeysFromBefore {
  readonly #client: DynamoDBDocumentClient;
  readonly #inventoryTable: string;
  readonly #identityTable: string;

  constructor(options: {
    readonly client: DynamoDBDocumentClient;
    readonly inventoryTable: string;
    readonly identityTable: string;
  }) {
    this.#client = options.client;
    this.#inventoryTable = options.inventoryTable;
    this.#identityTable = options.identityTable;
  }

  async enrolledWithoutSealingKey(): Promise<EnrolledKey[]> {
    const items = await scanAll(this.#client, inventory, {
      TableName: this.#inventoryTable,
      FilterExpression: `sk = :enrolment AND attribute_exists(thumbprint) AND ${keepsNoSealingKey}`,
      ExpressionAttributeValues: { ':enrolment': 'enrolment' },
      ProjectionExpression: 'pk, sk, thumbprint',
      ConsistentRead: true,
    });
    return items
      .filter((item) => typeof item.thumbprint === 'string' && String(item.pk).startsWith('node#'))
      .map((item) => ({ node: String(item.pk).slice('node#'.length), thumbprint: String(item.thumbprint) }))
      .sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
  }

  async storedSealingKeys(enrolled: readonly EnrolledKey[]): Promise<Map<string, SealingKeyJwk>> {
    const found = await getItems(
      this.#client,
      identity,
      this.#identityTable,
      enrolled.flatMap(({ node, thumbprint }) => [
        identityKeyItemKey(node, thumbprint),
        enrolledKeyItemKey(node),
      ]),
    );
    const keys = new Map<string, SealingKeyJwk>();
    for (const { node, thumbprint } of enrolled) {
      const keyItem = identityKeyItemKey(node, thumbprint);
      const enrolledItem = enrolledKeyItemKey(node);
      const key = found.get(`${keyItem.pk}|${keyItem.sk}`);
      const named = found.get(`${enrolledItem.pk}|${enrolledItem.sk}`);
      // The identity must still name this signing key: a key item alone may be a loser's.
      if (named?.thumbprint !== thumbprint || !key?.sealingKey || typeof key.sealingKey !== 'object')
        continue;
      const sealing = sealingKeyOf(key.sealingKey as { x?: unknown });
      if (sealing) keys.set(node, sealing.jwk);
    }
    return keys;
  }

  async done(): Promise<boolean> {
    const { Item } = await askStore(inventory, () =>
      this.#client.send(
        new GetCommand({ TableName: this.#inventoryTable, Key: upgradeDoneKey, ConsistentRead: true }),
      ),
    );
    return Item !== undefined;
  }

  async markDone(at: string): Promise<void> {
    await askStore(inventory, () =>
      this.#client.send(
        new PutCommand({ TableName: this.#inventoryTable, Item: { ...upgradeDoneKey, doneAt: at } }),
      ),
    );
  }

  async recordSealingKey(node: string, thumbprint: string, key: SealingKeyJwk): Promise<boolean> {
    try {
      await askStore(inventory, () =>
        this.#client.send(
          new UpdateCommand({
            TableName: this.#inventoryTable,
            Key: enrolmentItemKey(node),
            UpdateExpression: 'SET sealingKey = :sealingKey',
            ConditionExpression: `${namesTheSameKey} AND ${keepsNoSealingKey}`,
            ExpressionAttributeValues: {
              ':thumbprint': thumbprint,
              ':sealingKey': { kty: key.kty, crv: key.crv, x: key.x },
            },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
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
