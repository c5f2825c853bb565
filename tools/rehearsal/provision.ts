import type {
  AttributeDefinition,
  DynamoDBClient,
  GlobalSecondaryIndex,
  KeySchemaElement,
  LocalSecondaryIndex,
} from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { ensureQueueWith, ensureTableFrom } from '../../lib/runtime/provision.ts';
import { resourcesOfType } from './assembly.ts';
import type { References } from './references.ts';

type Index = {
  IndexName: string;
  KeySchema: KeySchemaElement[];
  Projection?: GlobalSecondaryIndex['Projection'];
};

const tableTypes = ['AWS::DynamoDB::Table', 'AWS::DynamoDB::GlobalTable'];

/** What the template says about a table, as DynamoDB's CreateTable takes it (billing is always on demand here). */
function tableInput(properties: Record<string, unknown>, tableName: string) {
  const indexes = (list: unknown) =>
    ((list as Index[] | undefined) ?? []).map((index) => ({
      IndexName: index.IndexName,
      KeySchema: index.KeySchema,
      Projection: index.Projection ?? { ProjectionType: 'ALL' as const },
    }));
  const global = indexes(properties.GlobalSecondaryIndexes) as GlobalSecondaryIndex[];
  const local = indexes(properties.LocalSecondaryIndexes) as LocalSecondaryIndex[];
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST' as const,
    AttributeDefinitions: properties.AttributeDefinitions as AttributeDefinition[],
    KeySchema: properties.KeySchema as KeySchemaElement[],
    ...(global.length > 0 ? { GlobalSecondaryIndexes: global } : {}),
    ...(local.length > 0 ? { LocalSecondaryIndexes: local } : {}),
  };
}

/** Creates every table of the template on the DynamoDB endpoint, leaving one that exists as it is. */
export async function provisionTables(client: DynamoDBClient, references: References): Promise<string[]> {
  const tables = Object.entries(references.template.Resources).filter(([, resource]) =>
    tableTypes.includes(resource.Type),
  );
  return Promise.all(
    tables.map(async ([logicalId, resource]) => {
      const properties = references.resolve(resource.Properties ?? {}, logicalId) as Record<string, unknown>;
      const tableName = references.identity(logicalId)?.ref as string;
      const ttl = properties.TimeToLiveSpecification as
        | { AttributeName?: string; Enabled?: boolean }
        | undefined;
      await ensureTableFrom(
        client,
        tableInput(properties, tableName),
        ttl?.Enabled ? ttl.AttributeName : undefined,
      );
      return tableName;
    }),
  );
}

const queueAttributeNames = [
  'FifoQueue',
  'ContentBasedDeduplication',
  'DeduplicationScope',
  'FifoThroughputLimit',
  'DelaySeconds',
  'MaximumMessageSize',
  'MessageRetentionPeriod',
  'ReceiveMessageWaitTimeSeconds',
  'VisibilityTimeout',
  'RedrivePolicy',
  'RedriveAllowPolicy',
] as const;

/** Creates every queue of the template on the SQS endpoint (or brings a kept one to it), dead-letter queues first. */
export async function provisionQueues(client: SQSClient, references: References): Promise<string[]> {
  const queues = resourcesOfType(references.template, 'AWS::SQS::Queue').map(([logicalId, resource]) => ({
    logicalId,
    properties: references.resolve(resource.Properties ?? {}, logicalId) as Record<string, unknown>,
  }));
  queues.sort((a, b) => Number('RedrivePolicy' in a.properties) - Number('RedrivePolicy' in b.properties));
  const names: string[] = [];
  for (const { logicalId, properties } of queues) {
    const attributes: Record<string, string> = {};
    for (const name of queueAttributeNames) {
      const value = properties[name];
      if (value === undefined) continue;
      attributes[name] = typeof value === 'object' ? JSON.stringify(value) : String(value);
    }
    const name = references.identity(logicalId)?.attributes.QueueName as string;
    await ensureQueueWith(client, name, attributes);
    names.push(name);
  }
  return names;
}
