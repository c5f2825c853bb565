import {
  type AgentFields,
  distinctVersions,
  restoringVersion,
  settingVersion,
} from '../../core/mesh/agent-before.ts';
import type { AgentVersions } from '../../core/mesh/ports.ts';
import { factsItemKey } from '../dynamodb/keys.ts';
import { markUpdates, nodeKey } from '../dynamodb/mesh-items.ts';
import { getItems, type Item, itemPresent, TableStore, transact } from '../dynamodb/requests.ts';

/** Nodes set at once, each in its own transaction (its node item, its mark, `mesh#marked`), as carriers are moved. */
const nodesInFlight = 8;
/** Nodes whose items are read in one go before they are set: 2 items a node, a few BatchGets. */
const nodesPerRead = 200;

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
    await this.#inChunks(nodes, true, async (node, item, facts) => {
      if (!item) return;
      const reported = typeof facts?.agent === 'string' ? facts.agent : undefined;
      const setting = settingVersion(item as AgentFields, reported, version, rollout);
      if (!setting.write || (await this.#write(node, item as AgentFields, setting.write)))
        before.push(setting.before);
    });
    return distinctVersions(before, limit);
  }

  async restoreAgentVersion(rollout: string, version: string, nodes: readonly string[]): Promise<void> {
    await this.#inChunks(nodes, false, async (node, item) => {
      const back = item && restoringVersion(item as AgentFields, rollout, version);
      if (back) await this.#write(node, item as AgentFields, back);
    });
  }

  /** The nodes' items (and facts, when asked), read a chunk at a time, then each node's write, a few at once. */
  async #inChunks(
    nodes: readonly string[],
    withFacts: boolean,
    each: (node: string, item: Item | undefined, facts: Item | undefined) => Promise<void>,
  ): Promise<void> {
    for (let start = 0; start < nodes.length; start += nodesPerRead) {
      const chunk = nodes.slice(start, start + nodesPerRead);
      const keys = chunk.flatMap((node) => [nodeKey(node), ...(withFacts ? [factsItemKey(node)] : [])]);
      const items = await getItems(this.client, store, this.tableName, keys);
      const itemOf = (key: { pk: string; sk: string }) => items.get(`${key.pk}|${key.sk}`);
      for (let at = 0; at < chunk.length; at += nodesInFlight)
        await Promise.all(
          chunk
            .slice(at, at + nodesInFlight)
            .map((node) =>
              each(node, itemOf(nodeKey(node)), withFacts ? itemOf(factsItemKey(node)) : undefined),
            ),
        );
    }
  }

  /**
   * One node's agent fields written as given (a field absent is removed), with its stale mark,
   * only while its item asks for the version read; false when it changed since (another
   * writer's word stands; nothing of this one is written).
   */
  async #write(node: string, read: AgentFields, fields: AgentFields): Promise<boolean> {
    const names = ['agentVersion', 'agentBefore'] as const;
    const sets = names.filter((name) => fields[name] !== undefined);
    const removes = names.filter((name) => fields[name] === undefined);
    const asked = read.agentVersion;
    const failed = await transact(this.client, store, [
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
    ]);
    return failed === undefined;
  }
}
