import { DeleteCommand, type DynamoDBDocumentClient, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { askStore } from '../../core/unavailable.ts';
import type { TransactItem } from '../dynamodb/requests.ts';

/**
 * Starts under way, in the inventory table:
 *
 * | pk                  | sk             | attributes |
 * |---------------------|----------------|------------|
 * | `rollouts#starting` | `<rollout id>` | startedAt |
 *
 * A start marks itself before it puts its parts and deletes the mark in its header's
 * transaction, so a start that died between the two leaves a mark and parts no header names. Each
 * start sweeps the oldest few marks older than `startStaleMs`: a mark with no header has its
 * rollout's partition deleted (it holds that start's parts alone), then the mark goes.
 */
export const startingPartition = 'rollouts#starting';
const startingKey = (id: string) => ({ pk: startingPartition, sk: id });
/** Longer than any start takes (its request's time): a start marked longer ago than this died. */
export const startStaleMs = 10 * 60_000;
/** How many marks one sweep looks at: a start's own cost stays bounded. */
const sweptPerStart = 5;

const store = 'the inventory table';

export class RolloutStarts {
  readonly #client: DynamoDBDocumentClient;
  readonly #tableName: string;
  readonly #now: () => string;

  constructor(client: DynamoDBDocumentClient, tableName: string, now: () => string) {
    this.#client = client;
    this.#tableName = tableName;
    this.#now = now;
  }

  async mark(id: string): Promise<void> {
    await askStore(store, () =>
      this.#client.send(
        new PutCommand({ TableName: this.#tableName, Item: { ...startingKey(id), startedAt: this.#now() } }),
      ),
    );
  }

  /** The mark's delete, for the header's transaction. */
  unmark(id: string): TransactItem {
    return { Delete: { TableName: this.#tableName, Key: startingKey(id) } };
  }

  /** The oldest few marks of starts that died, their parts deleted when no header came; how many it took. */
  async sweep(
    recorded: (id: string) => Promise<boolean>,
    removeParts: (id: string) => Promise<void>,
  ): Promise<number> {
    const { Items } = await askStore(store, () =>
      this.#client.send(
        new QueryCommand({
          TableName: this.#tableName,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': startingPartition },
          Limit: sweptPerStart,
          ConsistentRead: true,
        }),
      ),
    );
    const now = Date.parse(this.#now());
    let swept = 0;
    for (const mark of Items ?? []) {
      const id = String(mark.sk);
      if (now - Date.parse(String(mark.startedAt)) < startStaleMs) continue;
      if (!(await recorded(id))) await removeParts(id);
      await askStore(store, () =>
        this.#client.send(new DeleteCommand({ TableName: this.#tableName, Key: startingKey(id) })),
      );
      swept += 1;
    }
    return swept;
  }
}
