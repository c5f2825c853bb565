import { makeDynamoDBClient } from '../../adapters/aws-clients.ts';
import { DynamoDBNodeKeyStore } from '../../adapters/dynamodb/identity-node-keys.ts';
import { DynamoDBTokenStore } from '../../adapters/dynamodb/token-store.ts';
import type { MeshConfig } from '../../config.ts';
import type { NodeKeyStore, TokenStore } from '../../core/enrolment/ports.ts';

export type EnrolmentStores = { readonly tokens: TokenStore; readonly keys: NodeKeyStore };

/** The production stores of the enrolment handlers, built once per Lambda instance. */
export function enrolmentStores(config: MeshConfig): EnrolmentStores {
  const client = makeDynamoDBClient(config);
  return {
    tokens: new DynamoDBTokenStore({ client, tableName: config.inventoryTable }),
    keys: new DynamoDBNodeKeyStore({ client, tableName: config.identityTable }),
  };
}
