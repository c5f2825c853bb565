import type { Minted } from '../../core/mesh/declaration.ts';
import { MeshRaceError } from '../../core/mesh/errors.ts';
import type { NodeSnapshot, Provision, SealingKey } from '../../core/mesh/model.ts';
import type { PushStore, SendWrite } from '../../core/mesh/store.ts';
import {
  inlineBytes,
  removeParts,
  removePartsBefore,
  splitParts,
  writeParts,
} from '../dynamodb/declaration-parts.ts';
import { enrolmentItemKey, nodePartition } from '../dynamodb/keys.ts';
import {
  allNodesIndex,
  deliveryItem,
  grantItem,
  markClears,
  markedPartition,
  markUpdates,
  provisionItem,
  sealingKeyFrom,
  snapshotFrom,
} from '../dynamodb/mesh-items.ts';
import {
  getItems,
  type Item,
  itemAbsent,
  queryAll,
  TableStore,
  type TransactItem,
  transact,
  transactionLimit,
} from '../dynamodb/requests.ts';
import { claimKey } from '../rollout/rollout-claims.ts';

// The named parts of every condition, so a refusal says which rule held it back.
const neverSent = itemAbsent;
const revisionIsNext = 'revision = :previous';
const provisionUnminted = itemAbsent;
const grantUnissued = itemAbsent;
/** A mint again (a key changed, a rotation asked) replaces only the generation it was composed from. */
const generationAsRead = 'generation = :generation';
const keptFromBeforeSealing = 'attribute_not_exists(generation)';

/** The send's own items besides its mints: the delivery, the two that clear the node's mark, its claim's fence. */
const sendOwnItems = 4;
/** The claim as the send read it: absent, or still the same rollout's. */
const claimUnclaimed = itemAbsent;
const claimedBySame = '#rollout = :claimer';

/** Asked of every push request, so the push bench can count what a push costs. */
const capacity = { ReturnConsumedCapacity: 'TOTAL' } as const;
const store = 'the inventory table';

/** Compose-and-send's reads and writes on the inventory table; item shapes are in mesh-items.ts. */
export class DynamoDBPushStore extends TableStore implements PushStore {
  async readNode(node: string): Promise<NodeSnapshot | undefined> {
    return snapshotFrom(node, await this.#partition(node));
  }

  /** The `enrolment` items of these nodes (token-store.ts), strongly read, 100 keys a request. */
  async readSealingKeys(nodes: readonly string[]): Promise<ReadonlyMap<string, SealingKey>> {
    const keys = new Map<string, SealingKey>();
    const items = await getItems(this.client, store, this.tableName, nodes.map(enrolmentItemKey));
    for (const item of items.values()) {
      const key = sealingKeyFrom(item);
      if (key) keys.set(String(item.node), key);
    }
    return keys;
  }

  /**
   * A declaration over one item goes in parts first (declaration-parts.ts), under keys no head
   * names yet; the head that names them is put by the send's transaction, and the parts it
   * replaced are removed after it. So what a host reads is one send's whole declaration or the
   * one before it, whatever fails in between.
   */
  async send(write: SendWrite): Promise<void> {
    const where = { client: this.client, tableName: this.tableName, node: write.node };
    const parts = Buffer.byteLength(write.canonical) > inlineBytes ? splitParts(write.canonical) : undefined;
    if (parts) await writeParts(where, write, parts);
    try {
      await this.#sendHead(write, parts?.length);
    } catch (error) {
      // Named by no head: a lost race's parts go at once, those of a write the store failed with a later send.
      if (parts && error instanceof MeshRaceError)
        await removeParts(where, write, parts.length).catch(ignore);
      throw error;
    }
    // The send has committed: old parts that stay (the store away now) are named by no head, and
    // the next send's removal takes them, so the send is not failed for them.
    if (parts || write.previousParts) await removePartsBefore(where, write).catch(ignore);
  }

  /**
   * One transaction when it fits DynamoDB's 100 items. A send minting more (a node given many
   * relations at once: 2 items a provision, 2 more a provider marked) first mints the overflow
   * in transactions of its own, each fenced by the node's mark: it must be the one read (then
   * the one the previous step left), and each step moves it on, so a removal or change that
   * read the node before a step fails its own mark condition and reads again. A send that loses
   * after a step leaves provisions that exist for relations that exist: the next compose finds
   * and sends them, and their providers are already marked for the grants.
   */
  async #sendHead(write: SendWrite, parts: number | undefined): Promise<void> {
    let mark = write.mark;
    let mints = write.mints;
    while (itemsFor(write.node, mints) + sendOwnItems > transactionLimit) {
      const ahead = mintsThatFit(write.node, mints, transactionLimit - 2);
      await this.#mintAhead(write.node, ahead, mark);
      mark = (mark ?? 0) + 1;
      mints = mints.slice(ahead.length);
    }
    const items: TransactItem[] = [
      {
        Put: {
          TableName: this.tableName,
          Item: deliveryItem(write, parts),
          ConditionExpression: write.previousRevision === undefined ? neverSent : revisionIsNext,
          ...(write.previousRevision !== undefined
            ? { ExpressionAttributeValues: { ':previous': write.previousRevision } }
            : {}),
        },
      },
      ...this.#mintItems(write.node, mints),
    ];
    const markAt = items.length;
    if (mark !== undefined && !write.keepMark) items.push(...markClears(this.tableName, write.node, mark));
    const claimAt = items.length;
    if (write.claim !== undefined) items.push(claimFence(this.tableName, write.node, write.claim));
    const failed = await this.#transact(items);
    if (!failed) return;
    const lost = failed.findIndex(Boolean);
    const race = lost === 0 ? 'revision' : lost === markAt ? 'mark' : lost === claimAt ? 'claim' : 'mint';
    throw new MeshRaceError(race, failed[lost]?.old);
  }

  /** Mints ahead of a send: the node's mark moved on from `mark` (its fence), the mints, their providers marked. */
  async #mintAhead(node: string, mints: readonly Provision[], mark: number | undefined): Promise<void> {
    const fence = markUpdates(this.tableName, node, this.now(), { seen: mark });
    const failed = await this.#transact([...fence, ...this.#mintItems(node, mints)]);
    if (!failed) return;
    const lost = failed.findIndex(Boolean);
    throw new MeshRaceError(lost === 0 ? 'mark' : 'mint', failed[lost]?.old);
  }

  /** Each mint's provision and grant, then a mark on each provider node other than `node`. */
  #mintItems(node: string, mints: readonly Minted[]): TransactItem[] {
    const items: TransactItem[] = [];
    for (const mint of mints) {
      const condition = mintCondition(mint);
      items.push(
        { Put: { TableName: this.tableName, Item: provisionItem(mint), ...condition.provision } },
        { Put: { TableName: this.tableName, Item: grantItem(mint), ...condition.grant } },
      );
    }
    for (const provider of providersOf(node, mints))
      items.push(...markUpdates(this.tableName, provider, this.now()));
    return items;
  }

  async clearMark(node: string, mark: number): Promise<void> {
    // A newer mark that came in since the read stays (the condition fails), and the next round looks again.
    await this.#transact(markClears(this.tableName, node, mark));
  }

  /** Strongly consistent: a mark written a moment ago is seen (see mesh-items.ts). */
  async listMarked(): Promise<string[]> {
    const items = await queryAll(this.client, store, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': markedPartition },
      ConsistentRead: true,
      ...capacity,
    });
    return items.map((item) => String(item.sk));
  }

  /** Through gsi1, which may lag: the audit adds the marked nodes to it (lib/server/core/push/pusher.ts). */
  async listNodes(): Promise<string[]> {
    const items = await queryAll(this.client, store, {
      TableName: this.tableName,
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :index',
      ExpressionAttributeValues: { ':index': allNodesIndex },
      ...capacity,
    });
    return items.map((item) => String(item.gsi1sk));
  }

  #partition(node: string): Promise<Item[]> {
    return queryAll(this.client, store, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': nodePartition(node) },
      ConsistentRead: true,
      ...capacity,
    });
  }

  #transact(items: readonly TransactItem[]) {
    return transact(this.client, store, items, capacity);
  }
}

const ignore = () => undefined;

/** The node's rollout claim (rollout-claims.ts) checked to be as the send read it. */
function claimFence(tableName: string, node: string, claim: string | null): TransactItem {
  return {
    ConditionCheck: {
      TableName: tableName,
      Key: claimKey(node),
      ...(claim === null
        ? { ConditionExpression: claimUnclaimed }
        : {
            ConditionExpression: claimedBySame,
            ExpressionAttributeNames: { '#rollout': 'rollout' },
            ExpressionAttributeValues: { ':claimer': claim },
          }),
    },
  };
}

function mintCondition(mint: Minted) {
  if (mint.replaces === undefined)
    return {
      provision: { ConditionExpression: provisionUnminted },
      grant: { ConditionExpression: grantUnissued },
    };
  const again =
    mint.replaces === ''
      ? { ConditionExpression: keptFromBeforeSealing }
      : {
          ConditionExpression: generationAsRead,
          ExpressionAttributeValues: { ':generation': mint.replaces },
        };
  return { provision: again, grant: again };
}

const providersOf = (node: string, mints: readonly Provision[]) =>
  new Set(mints.map((mint) => mint.providerNode).filter((provider) => provider !== node));

/** The items `mints` take in a transaction: a provision and a grant each, two for each provider marked. */
const itemsFor = (node: string, mints: readonly Provision[]) =>
  mints.length * 2 + providersOf(node, mints).size * 2;

/** The longest run of `mints`, from the first, whose items fit in `room`. */
function mintsThatFit(node: string, mints: readonly Provision[], room: number): readonly Provision[] {
  const providers = new Set<string>();
  let used = 0;
  let count = 0;
  for (const mint of mints) {
    const marksProvider = mint.providerNode !== node && !providers.has(mint.providerNode);
    const needs = 2 + (marksProvider ? 2 : 0);
    if (used + needs > room) break;
    used += needs;
    if (marksProvider) providers.add(mint.providerNode);
    count += 1;
  }
  return mints.slice(0, count);
}
