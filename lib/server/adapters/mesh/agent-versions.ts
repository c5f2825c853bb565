import type { AgentVersions } from '../../core/mesh/ports.ts';
import { markUpdates, nodeKey } from '../dynamodb/mesh-items.ts';
import { itemPresent, TableStore, transact } from '../dynamodb/requests.ts';

/** Nodes set at once, each in its own transaction (its node item, its mark, `mesh#marked`), as carriers are moved. */
const nodesInFlight = 8;

const store = 'the inventory table';

/**
 * The wanted agent version on each node's item (`agentVersion`), written with the node's stale
 * mark so the wave's push finds it behind and sends it a declaration naming the version. A failed
 * condition is nothing to do: the node is gone, or at the version already (and not marked again).
 */
export class DynamoAgentVersions extends TableStore implements AgentVersions {
  async setAgentVersion(version: string, nodes: readonly string[]): Promise<void> {
    for (let start = 0; start < nodes.length; start += nodesInFlight)
      await Promise.all(nodes.slice(start, start + nodesInFlight).map((node) => this.#set(node, version)));
  }

  async #set(node: string, version: string): Promise<void> {
    await transact(this.client, store, [
      {
        Update: {
          TableName: this.tableName,
          Key: nodeKey(node),
          UpdateExpression: 'SET agentVersion = :version',
          ConditionExpression: `${itemPresent} AND (attribute_not_exists(agentVersion) OR agentVersion <> :version)`,
          ExpressionAttributeValues: { ':version': version },
        },
      },
      ...markUpdates(this.tableName, node, this.now()),
    ]);
  }
}
