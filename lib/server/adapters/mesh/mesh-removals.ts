import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { AuditEntry } from '../../core/audit/record.ts';
import { MeshRaceError, NodeNotFoundError, RemovalTooLargeError } from '../../core/mesh/errors.ts';
import type { NodeSnapshot, Sent } from '../../core/mesh/model.ts';
import { firstStep, joinSteps, type RemovalPlan } from '../../core/mesh/removal.ts';
import type { MeshRemovals } from '../../core/mesh/store.ts';
import { type AuditTrail, auditItemsMax } from '../audit/audit-trail.ts';
import { removeParts } from '../dynamodb/declaration-parts.ts';
import { nodePartition } from '../dynamodb/keys.ts';
import { snapshotFrom } from '../dynamodb/mesh-items.ts';
import {
  type Item,
  queryAll,
  transactionLimit as storeLimit,
  type TransactItem,
} from '../dynamodb/requests.ts';
import { removalItems } from './mesh-removal.ts';

/** What a removal step's own items may be: each step carries its audit record too. */
const transactionLimit = storeLimit - auditItemsMax;

const store = 'the inventory table';

/** A node at every limit (500 relations, 100 modules) is taken away in about 40 steps. */
const maxSteps = 100;

/**
 * Removals on the inventory table and, when a node goes, its keys in the identity table: the
 * node, its keys and what is left of it go in one transaction across both, so a removed node's
 * host is refused at once and no node is left half-removed. What a removal takes is decided by
 * the core from the node's partition read whole (lib/server/core/mesh/removal.ts); mesh-removal.ts
 * turns that into the transaction.
 */
export class DynamoDBMeshRemovals implements MeshRemovals {
  readonly #client: DynamoDBDocumentClient;
  readonly #inventory: string;
  readonly #identity: string;
  readonly #now: () => string;
  readonly #audit: AuditTrail;

  constructor(options: {
    readonly client: DynamoDBDocumentClient;
    readonly inventoryTable: string;
    readonly identityTable: string;
    readonly audit: AuditTrail;
    readonly now?: () => string;
  }) {
    this.#audit = options.audit;
    this.#client = options.client;
    this.#inventory = options.inventoryTable;
    this.#identity = options.identityTable;
    this.#now = options.now ?? (() => new Date().toISOString());
  }

  /**
   * One transaction when the removal fits in DynamoDB's 100 items. A larger one (a node with
   * many modules, a provider with many consumers, removed with --cascade) is taken away in
   * steps, each a removal on its own (`firstStep`: relations, then modules, the node last), each
   * decided from a fresh read with every condition that read gives. A step that loses a race
   * fails the call with the steps before it kept; run again, the removal goes on from there.
   */
  async remove(
    node: string,
    plan: (snapshot: NodeSnapshot) => RemovalPlan,
    entry: AuditEntry,
  ): Promise<RemovalPlan> {
    const steps: RemovalPlan[] = [];
    for (let round = 0; round < maxSteps; round += 1) {
      const read = await this.#partition(this.#inventory, node);
      const snapshot = snapshotFrom(node, read);
      if (!snapshot) throw new NodeNotFoundError(node);
      const decided = plan(snapshot);
      const itemsOf = (part: RemovalPlan, keys: readonly Item[] = []) =>
        removalItems(part, read, keys, { inventory: this.#inventory, identity: this.#identity }, this.#now());
      // The node's keys go only with its last step: a removal too large without them is larger with them.
      let whole = itemsOf(decided);
      if (decided.node && whole.length <= transactionLimit)
        whole = itemsOf(decided, await this.#partition(this.#identity, node));
      if (whole.length <= transactionLimit) {
        await this.#write(whole, entry);
        if (decided.node && snapshot.sent?.parts)
          await this.#removeParts(node, snapshot.sent, snapshot.sent.parts);
        return joinSteps([...steps, decided]);
      }
      const step = firstStep(decided, node, (part) => itemsOf(part).length <= transactionLimit);
      if (!step)
        throw new RemovalTooLargeError(decided.node ?? `from ${node}`, whole.length, transactionLimit);
      // Each step is a change of its own, kept if a later one fails: it is recorded as a part.
      await this.#write(itemsOf(step), { ...entry, outcome: `step ${steps.length + 1}` });
      steps.push(step);
    }
    throw new Error(`removing from ${node} took more than ${maxSteps} steps`);
  }

  /**
   * The parts of a removed node's last declaration (declaration-parts.ts), which its head named
   * and nothing names now. Exactly those keys, so a node of the same name added and pushed since
   * keeps its own; left behind if the store is away now, unread and harmless.
   */
  async #removeParts(node: string, sent: Sent, parts: number): Promise<void> {
    const where = { client: this.#client, tableName: this.#inventory, node };
    await removeParts(where, sent, parts).catch(() => undefined);
  }

  async #write(items: readonly TransactItem[], entry: AuditEntry): Promise<void> {
    const failed = await this.#audit.transact(store, items, entry);
    if (failed) throw new MeshRaceError('model', failed.find(Boolean)?.old);
  }

  #partition(table: string, node: string) {
    return queryAll(this.#client, store, {
      TableName: table,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': nodePartition(node) },
      ConsistentRead: true,
    });
  }
}
