import { mapLimit } from '../../core/map-limit.ts';
import {
  type AgentFields,
  addAsked,
  distinctVersions,
  restoringVersion,
  settingVersion,
  versionAsked,
} from '../../core/mesh/agent-before.ts';
import type { AgentAsking, AgentVersions, HostsAsked } from '../../core/mesh/ports.ts';
import { factsItemKey } from '../dynamodb/keys.ts';
import { markUpdates, nodeKey } from '../dynamodb/mesh-items.ts';
import {
  getItems,
  type Item,
  itemPresent,
  TableStore,
  type TransactItem,
  transact,
} from '../dynamodb/requests.ts';

/**
 * Nodes written in one transaction (3 items each: the node, its mark, its marked entry; 100 at
 * most), and transactions in flight: DynamoDB Local takes about 180 transactions a second however
 * many are in flight, so a wave of 50,000 nodes costs transactions of many nodes, not more of them.
 */
const nodesPerTransaction = 25;
const transactionsInFlight = 4;
/** Nodes whose items are read in one go before they are set: 2 items a node, a few BatchGets. */
const nodesPerRead = 200;
/** Nodes whose items are read in one go by askedOf, which writes nothing: BatchGets in flight at once. */
const nodesPerAsk = 2_000;

const store = 'the inventory table';

/**
 * The wanted agent version on each node's item (`agentVersion`), written with the node's stale
 * mark so the wave's push finds it behind and sends it a declaration naming the version. Beside
 * it, `agentBefore` keeps what the host ran before, by rollout (core/mesh/agent-before.ts), for
 * the rollout's undo. Every write holds only if the item still asks for the version read, so a
 * node removed, or changed by another writer since, is left as it is.
 */
export class DynamoAgentVersions extends TableStore implements AgentVersions {
  async setAgentVersion(
    version: string,
    nodes: readonly string[],
    rollout: string,
    limit: number,
  ): Promise<readonly string[]> {
    const before: Array<string | null | undefined> = [];
    await this.#inChunks(nodes, true, (node, item, facts) => {
      if (!item) return undefined;
      const reported = typeof facts?.agent === 'string' ? facts.agent : undefined;
      const setting = settingVersion(item as AgentFields, reported, version, rollout);
      if (!setting.write) {
        before.push(setting.before);
        return undefined;
      }
      return {
        node,
        read: item as AgentFields,
        fields: setting.write,
        written: () => before.push(setting.before),
      };
    });
    return distinctVersions(before, limit);
  }

  async restoreAgentVersion(rollout: string, version: string, nodes: readonly string[]): Promise<void> {
    await this.#inChunks(nodes, false, (node, item) => {
      const back = item && restoringVersion(item as AgentFields, rollout, version);
      return back ? { node, read: item as AgentFields, fields: back } : undefined;
    });
  }

  /**
   * Reads only: the facts of every node, and its item when an undo is asked (what it would be
   * set back to is the node's own), in BatchGets of 100 keys, a few at once (getItems).
   */
  async askedOf(nodes: readonly string[], asking: AgentAsking): Promise<HostsAsked> {
    const asked = new Map<string, Map<string | null, string[]>>();
    for (let start = 0; start < nodes.length; start += nodesPerAsk) {
      const chunk = nodes.slice(start, start + nodesPerAsk);
      const keys = chunk.flatMap((node) => [
        factsItemKey(node),
        ...(asking.kind === 'restore' ? [nodeKey(node)] : []),
      ]);
      const items = await getItems(this.client, store, this.tableName, keys);
      const itemOf = (key: { pk: string; sk: string }) => items.get(`${key.pk}|${key.sk}`);
      for (const node of chunk) {
        const item = asking.kind === 'restore' ? itemOf(nodeKey(node)) : {};
        const arch = itemOf(factsItemKey(node))?.arch;
        addAsked(
          asked,
          node,
          versionAsked(item as AgentFields | undefined, asking),
          typeof arch === 'string' ? arch : null,
        );
      }
    }
    return asked;
  }

  /**
   * The nodes' items (and facts, when asked), read a chunk at a time; the writes `plan` makes of
   * them go in transactions of many nodes, a few at once. A transaction one node's condition
   * failed (its item changed since it was read) is written again a node at a time, so only that
   * node is left as it is.
   */
  async #inChunks(
    nodes: readonly string[],
    withFacts: boolean,
    plan: (node: string, item: Item | undefined, facts: Item | undefined) => NodeWrite | undefined,
  ): Promise<void> {
    for (let start = 0; start < nodes.length; start += nodesPerRead) {
      const chunk = nodes.slice(start, start + nodesPerRead);
      const keys = chunk.flatMap((node) => [nodeKey(node), ...(withFacts ? [factsItemKey(node)] : [])]);
      const items = await getItems(this.client, store, this.tableName, keys);
      const itemOf = (key: { pk: string; sk: string }) => items.get(`${key.pk}|${key.sk}`);
      const writes = chunk.flatMap((node) => {
        const write = plan(node, itemOf(nodeKey(node)), withFacts ? itemOf(factsItemKey(node)) : undefined);
        return write ? [write] : [];
      });
      const groups: NodeWrite[][] = [];
      for (let at = 0; at < writes.length; at += nodesPerTransaction)
        groups.push(writes.slice(at, at + nodesPerTransaction));
      await mapLimit(groups, transactionsInFlight, async (group) => {
        if (await this.#written(group)) return;
        for (const one of group) await this.#written([one]);
      });
    }
  }

  /** The group's writes in one transaction; true (each told) when it held. */
  async #written(group: readonly NodeWrite[]): Promise<boolean> {
    const failed = await transact(
      this.client,
      store,
      group.flatMap((write) => this.#items(write)),
    );
    if (failed !== undefined) return false;
    for (const write of group) write.written?.();
    return true;
  }

  /**
   * One node's agent fields written as given (a field absent is removed), with its stale mark,
   * only while its item asks for the version read: a node changed since is another writer's.
   */
  #items({ node, read, fields }: NodeWrite): TransactItem[] {
    const names = ['agentVersion', 'agentBefore'] as const;
    const sets = names.filter((name) => fields[name] !== undefined);
    const removes = names.filter((name) => fields[name] === undefined);
    const asked = read.agentVersion;
    return [
      {
        Update: {
          TableName: this.tableName,
          Key: nodeKey(node),
          UpdateExpression: [
            sets.length > 0 ? `SET ${sets.map((name) => `${name} = :${name}`).join(', ')}` : '',
            removes.length > 0 ? `REMOVE ${removes.join(', ')}` : '',
          ]
            .filter(Boolean)
            .join(' '),
          ConditionExpression: `${itemPresent} AND ${asked === undefined ? 'attribute_not_exists(agentVersion)' : 'agentVersion = :read'}`,
          ExpressionAttributeValues: {
            ...Object.fromEntries(sets.map((name) => [`:${name}`, fields[name]])),
            ...(asked === undefined ? {} : { ':read': asked }),
          },
        },
      },
      ...markUpdates(this.tableName, node, this.now()),
    ];
  }
}

/** One node's planned write: its fields as read, as to be written, and what to do once written. */
type NodeWrite = {
  readonly node: string;
  readonly read: AgentFields;
  readonly fields: AgentFields;
  readonly written?: () => void;
};
