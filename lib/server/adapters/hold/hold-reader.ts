import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { inForce } from '../../core/hold/freeze.ts';
import type { Claim, HoldingRollout, HoldingState, HoldView } from '../../core/hold/held-back.ts';
import type { HoldReader } from '../../core/hold/ports.ts';
import { labelsFrom, nodeKey } from '../dynamodb/mesh-items.ts';
import { getItems, queryAll } from '../dynamodb/requests.ts';
import { claimKey, claimPartition } from '../rollout/rollout-claims.ts';
import { holdingPartition } from '../rollout/rollout-holding.ts';
import { readFreezes } from './freeze-store.ts';

const store = 'the inventory table';

/**
 * What holds nodes back, read for a batch of sends (docs/decisions/held-back.md): the small
 * `rollouts#holding` partition (rollout-store.ts: one item per rollout that holds nodes, with its
 * state and the last wave it sent), the `freezes` partition (freeze-store.ts), the claims on the
 * batch's nodes (rollout-claims.ts) and, only while a freeze is in force, their labels: two
 * Queries of small partitions and one BatchGetItem a batch of 25. Every read is strong: a claim
 * or a freeze written a moment ago holds the next send.
 */
export class DynamoDBHoldReader implements HoldReader {
  readonly #client: DynamoDBDocumentClient;
  readonly #tableName: string;
  readonly #now: () => Date;

  constructor(options: {
    readonly client: DynamoDBDocumentClient;
    readonly tableName: string;
    readonly now?: () => Date;
  }) {
    this.#client = options.client;
    this.#tableName = options.tableName;
    this.#now = options.now ?? (() => new Date());
  }

  async view(nodes: readonly string[], known?: Pick<HoldView, 'rollouts' | 'freezes'>): Promise<HoldView> {
    const [rollouts, freezes] = known
      ? [known.rollouts, known.freezes]
      : await Promise.all([this.#holding(), this.#freezes()]);
    const keys = [...nodes.map(claimKey), ...(freezes.length > 0 ? nodes.map((node) => nodeKey(node)) : [])];
    const items = keys.length > 0 ? await getItems(this.#client, store, this.#tableName, keys) : new Map();
    const claims = new Map<string, Claim>();
    const labels = new Map<string, Readonly<Record<string, string>>>();
    for (const node of nodes) {
      const claim = items.get(`${claimPartition(node)}|claim`);
      if (claim) claims.set(node, { rollout: String(claim.rollout), wave: Number(claim.wave) });
      if (freezes.length > 0) labels.set(node, labelsFrom(items.get(`${nodeKey(node).pk}|node`)));
    }
    return { rollouts, freezes, claims, labels };
  }

  async #holding(): Promise<Map<string, HoldingRollout>> {
    const items = await queryAll(this.#client, store, {
      TableName: this.#tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': holdingPartition },
      ConsistentRead: true,
    });
    return new Map(
      items.map((item) => [
        String(item.sk),
        {
          state: String(item.state) as HoldingState,
          current: Number(item.current ?? -1),
          ...(typeof item.notSent === 'number' ? { notSent: item.notSent } : {}),
          ...(Array.isArray(item.unsentNames) ? { some: item.unsentNames.map(String) } : {}),
        },
      ]),
    );
  }

  async #freezes() {
    const now = this.#now();
    return (await readFreezes(this.#client, this.#tableName)).filter((freeze) => inForce(freeze, now));
  }
}
