import {
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeTableCommand,
  type DynamoDBClient,
  ResourceInUseException,
  UpdateTableCommand,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  SetQueueAttributesCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import {
  controlQueue,
  deadLetterQueue,
  identityTable,
  inventoryTable,
  type QueueDescription,
  type ResourceNames,
  type TableDescription,
} from '../server/setup/resources.ts';

/** Where the provisioned resources are: what a MeshConfig needs besides region and settings. */
export type ProvisionedResources = {
  readonly inventoryTable: string;
  readonly identityTable: string;
  readonly controlQueueUrl: string;
  readonly deadLetterQueueUrl: string;
};

/** Creates what lib/server/setup/resources.ts describes, leaving whatever already exists as it is. */
export async function provisionResources(
  clients: { readonly dynamodb: DynamoDBClient; readonly sqs: SQSClient },
  names: ResourceNames,
  // DynamoDB Local writes about twice as slowly to a table with a stream (docs/local-and-aws.md):
  // tests that do not read the summary leave it off.
  options: { readonly streams?: boolean } = {},
): Promise<ProvisionedResources> {
  const { stream: _stream, ...withoutStream } = inventoryTable;
  await Promise.all([
    ensureTable(
      clients.dynamodb,
      options.streams === false ? withoutStream : inventoryTable,
      names.inventoryTable,
    ),
    ensureTable(clients.dynamodb, identityTable, names.identityTable),
  ]);
  const deadLetterQueueUrl = await ensureQueue(clients.sqs, deadLetterQueue, names.deadLetterQueue);
  const deadLetterArn = await queueArn(clients.sqs, deadLetterQueueUrl);
  const controlQueueUrl = await ensureQueue(clients.sqs, controlQueue, names.controlQueue, deadLetterArn);
  return {
    inventoryTable: names.inventoryTable,
    identityTable: names.identityTable,
    controlQueueUrl,
    deadLetterQueueUrl,
  };
}

export function createTableInput(table: TableDescription, tableName: string): CreateTableCommandInput {
  const keys = [table.partitionKey, ...(table.sortKey ? [table.sortKey] : [])];
  const indexKeys = table.globalSecondaryIndexes.flatMap((index) => [
    index.partitionKey,
    ...(index.sortKey ? [index.sortKey] : []),
  ]);
  const attributes = new Map([...keys, ...indexKeys].map((key) => [key.name, key.type]));
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    ...(table.stream ? { StreamSpecification: { StreamEnabled: true, StreamViewType: table.stream } } : {}),
    AttributeDefinitions: [...attributes].map(([AttributeName, AttributeType]) => ({
      AttributeName,
      AttributeType,
    })),
    KeySchema: [
      { AttributeName: table.partitionKey.name, KeyType: 'HASH' },
      ...(table.sortKey ? [{ AttributeName: table.sortKey.name, KeyType: 'RANGE' as const }] : []),
    ],
    ...(table.globalSecondaryIndexes.length > 0
      ? {
          GlobalSecondaryIndexes: table.globalSecondaryIndexes.map((index) => ({
            IndexName: index.indexName,
            KeySchema: [
              { AttributeName: index.partitionKey.name, KeyType: 'HASH' as const },
              ...(index.sortKey ? [{ AttributeName: index.sortKey.name, KeyType: 'RANGE' as const }] : []),
            ],
            Projection: { ProjectionType: index.projection ?? 'ALL' },
          })),
        }
      : {}),
  };
}

async function ensureTable(client: DynamoDBClient, table: TableDescription, tableName: string) {
  await ensureTableFrom(client, createTableInput(table, tableName), table.timeToLiveAttribute);
}

/** Creates a table unless it exists, waits for it, and turns on TTL on the attribute given. */
export async function ensureTableFrom(
  client: DynamoDBClient,
  input: CreateTableCommandInput,
  timeToLiveAttribute?: string,
): Promise<void> {
  const tableName = input.TableName as string;
  try {
    await client.send(new CreateTableCommand(input));
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  await waitUntilTableExists(
    { client, maxWaitTime: 30, minDelay: 0.1, maxDelay: 1 },
    { TableName: tableName },
  );
  await ensureStream(client, input);
  if (timeToLiveAttribute) {
    const described = await client.send(new DescribeTableCommand({ TableName: tableName }));
    if (described.Table?.TableStatus === 'ACTIVE') {
      try {
        await client.send(
          new UpdateTimeToLiveCommand({
            TableName: tableName,
            TimeToLiveSpecification: { AttributeName: timeToLiveAttribute, Enabled: true },
          }),
        );
      } catch (error) {
        // Enabling TTL twice is refused with a ValidationException; the first one stands.
        if ((error as Error).name !== 'ValidationException') throw error;
      }
    }
  }
}

/** A table kept in a data folder from before it had a stream gets it now. */
async function ensureStream(client: DynamoDBClient, input: CreateTableCommandInput): Promise<void> {
  const wanted = input.StreamSpecification;
  if (!wanted?.StreamEnabled) return;
  const described = await client.send(new DescribeTableCommand({ TableName: input.TableName }));
  if (described.Table?.StreamSpecification?.StreamEnabled) return;
  await client.send(new UpdateTableCommand({ TableName: input.TableName, StreamSpecification: wanted }));
}

export function queueAttributes(queue: QueueDescription, deadLetterArn?: string): Record<string, string> {
  return {
    FifoQueue: 'true',
    ContentBasedDeduplication: String(queue.contentBasedDeduplication),
    VisibilityTimeout: String(queue.visibilityTimeoutSeconds),
    MessageRetentionPeriod: String(queue.messageRetentionSeconds),
    MaximumMessageSize: String(queue.maximumMessageBytes),
    ...(queue.highThroughput
      ? { DeduplicationScope: 'messageGroup', FifoThroughputLimit: 'perMessageGroupId' }
      : { DeduplicationScope: 'queue', FifoThroughputLimit: 'perQueue' }),
    ...(queue.deadLetter && deadLetterArn
      ? {
          RedrivePolicy: JSON.stringify({
            deadLetterTargetArn: deadLetterArn,
            maxReceiveCount: queue.deadLetter.maxReceiveCount,
          }),
        }
      : {}),
  };
}

async function ensureQueue(
  client: SQSClient,
  queue: QueueDescription,
  queueName: string,
  deadLetterArn?: string,
) {
  return ensureQueueWith(client, queueName, queueAttributes(queue, deadLetterArn));
}

/** Creates a queue with these attributes, or brings the one that exists to them; its URL. */
export async function ensureQueueWith(
  client: SQSClient,
  queueName: string,
  attributes: Record<string, string>,
): Promise<string> {
  try {
    const created = await client.send(
      new CreateQueueCommand({ QueueName: queueName, Attributes: attributes }),
    );
    if (!created.QueueUrl) throw new Error(`no URL came back for queue ${queueName}`);
    return created.QueueUrl;
  } catch (error) {
    // A queue kept from an earlier run with other attributes: bring it to the description.
    // Named `QueueNameExists` by some endpoints, `AWS.SimpleQueueService.QueueNameExists` by others.
    if (!/QueueNameExists|QueueAlreadyExists/.test((error as Error).name)) throw error;
    const { QueueUrl } = await client.send(new GetQueueUrlCommand({ QueueName: queueName }));
    if (!QueueUrl) throw new Error(`no URL came back for queue ${queueName}`, { cause: error });
    const { FifoQueue: _fixedAtCreation, ...settable } = attributes;
    const { Attributes: current = {} } = await client.send(
      new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['All'] }),
    );
    const changed = Object.fromEntries(
      Object.entries(settable).filter(([name, value]) => (current as Record<string, string>)[name] !== value),
    );
    if (Object.keys(changed).length === 0) return QueueUrl;
    try {
      await client.send(new SetQueueAttributesCommand({ QueueUrl, Attributes: changed }));
    } catch (refused) {
      // fauxqs sets the FIFO throughput mode at creation only (SQS lets it change): a queue kept
      // from an earlier run keeps its mode there, which changes no behaviour an emulator has
      const { DeduplicationScope: _scope, FifoThroughputLimit: _limit, ...rest } = changed;
      if (
        !/InvalidAttributeName/.test((refused as Error).name) ||
        Object.keys(rest).length === Object.keys(changed).length
      )
        throw refused;
      if (Object.keys(rest).length > 0)
        await client.send(new SetQueueAttributesCommand({ QueueUrl, Attributes: rest }));
    }
    return QueueUrl;
  }
}

async function queueArn(client: SQSClient, queueUrl: string): Promise<string> {
  const attributes = await client.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
  );
  const arn = attributes.Attributes?.QueueArn;
  if (!arn) throw new Error(`no ARN came back for queue ${queueUrl}`);
  return arn;
}
