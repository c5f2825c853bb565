import { type DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { makeDynamoDBClient } from '../../lib/adapters/aws-clients.ts';
import { DynamoDBAuditTrail } from '../../lib/adapters/dynamodb/audit-trail.ts';
import { nodeItemKey } from '../../lib/adapters/dynamodb/keys.ts';
import { DynamoDBNodeKeyStore } from '../../lib/adapters/dynamodb/node-key-store.ts';
import { documentClient } from '../../lib/adapters/dynamodb/requests.ts';
import { DynamoDBTokenStore } from '../../lib/adapters/dynamodb/token-store.ts';
import type { MeshConfig } from '../../lib/config.ts';
import type { PresentedKeys } from '../../lib/core/enrolment/keys.ts';
import { generateNodeKeys } from '../../lib/host/keys.ts';
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
