import { type DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { generateNodeKeys } from '../../lib/clients/host/keys.ts';
import { DynamoDBAuditTrail } from '../../lib/server/adapters/audit/audit-trail.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import { nodeItemKey } from '../../lib/server/adapters/dynamodb/keys.ts';
import { documentClient } from '../../lib/server/adapters/dynamodb/requests.ts';
import { DynamoDBNodeKeyStore } from '../../lib/server/adapters/enrolment/node-key-store.ts';
import { DynamoDBTokenStore } from '../../lib/server/adapters/enrolment/token-store.ts';
import type { PresentedKeys } from '../../lib/server/core/enrolment/keys.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import { RecordingSender } from '../support/control-fakes.ts';
import { scanAll } from '../support/table-contents.ts';

/** Shared by the enrolment integration tests: a store, a settable clock, nodes and keys. */
export function enrolmentFixture(config: MeshConfig, client: DynamoDBClient = makeDynamoDBClient(config)) {
  const clock = { ms: Date.parse('2026-10-01T12:00:00Z') };
  const now = () => new Date(clock.ms);
  const documents = documentClient(client);
  const tokens = new DynamoDBTokenStore({
    client: documents,
    tableName: config.inventoryTable,
    identityTable: config.identityTable,
    audit: new DynamoDBAuditTrail({
      client: documents,
      tableName: config.inventoryTable,
      retentionDays: 365,
    }),
  });
  const keys = new DynamoDBNodeKeyStore({ client: documents, tableName: config.identityTable });
  return {
    client,
    clock,
    now,
    tokens,
    keys,
    /** Where enrolments tell the control queue their keys changed (`enrolled:<node>`), kept to be read. */
    sender: new RecordingSender(),
    async addNode(node: string) {
      await client.send(
        new PutItemCommand({
          TableName: config.inventoryTable,
          Item: { pk: { S: nodeItemKey(node).pk }, sk: { S: 'node' }, name: { S: node } },
        }),
      );
    },
    scan: (table: 'inventory' | 'identity') =>
      scanAll(client, table === 'inventory' ? config.inventoryTable : config.identityTable),
  };
}

export async function presenterKeys(): Promise<PresentedKeys> {
  const { keys } = await generateNodeKeys();
  return { signing: keys.signing.publicJwk, sealing: keys.sealing.publicJwk } as PresentedKeys;
}
