import type { AccessRequest } from './iam-check.ts';

/** The keys of a table, as IAM's `dynamodb:LeadingKeys` needs them: the partition key of the table and of each index. */
export type TableKeys = {
  readonly tableArn: string;
  readonly partitionKey: string;
  readonly indexPartitionKeys: Readonly<Record<string, string>>;
};

/** An SDK call as the rehearsal's endpoint reads it: which service, which operation, and what it asks of IAM. */
export type AwsCall = {
  readonly service: 'dynamodb' | 'sqs' | 'states' | 'iot' | 'iotdata' | 'lambda';
  readonly operation: string;
  readonly input: Record<string, unknown>;
  readonly accesses: AccessRequest[];
};

export type CallContext = {
  readonly region: string;
  readonly account: string;
  readonly partition: string;
  /** The keys of a table by its name; undefined for a table the template does not have. */
  readonly tableKeys: (tableName: string) => TableKeys | undefined;
};

const targetPrefixes = {
  DynamoDB_20120810: 'dynamodb',
  AmazonSQS: 'sqs',
  AWSStepFunctions: 'states',
} as const;

type AttributeValue = { S?: string; N?: string; B?: string };
type Item = Record<string, AttributeValue>;

const scalar = (value: AttributeValue | undefined) => value?.S ?? value?.N ?? value?.B;

/** Reads the operation and its input from an X-Amz-Target JSON request, or an SQS query (form) request. */
export function readAwsCall(
  headers: Readonly<Record<string, string | string[] | undefined>>,
  body: string,
  context: CallContext,
): AwsCall | { readonly unreadable: string } {
  const target = String(headers['x-amz-target'] ?? '');
  let service: AwsCall['service'] | undefined;
  let operation: string;
  let input: Record<string, unknown>;
  if (target) {
    const [prefix, name] = target.split('.');
    service = targetPrefixes[prefix as keyof typeof targetPrefixes];
    operation = name ?? '';
    try {
      input = body ? (JSON.parse(body) as Record<string, unknown>) : {};
    } catch {
      return { unreadable: `the body of ${target} is not JSON` };
    }
  } else {
    const form = new URLSearchParams(body);
    operation = form.get('Action') ?? '';
    service = operation ? 'sqs' : undefined;
    input = Object.fromEntries(form);
  }
  if (!service)
    return {
      unreadable: `the call ${target || '(no X-Amz-Target, no Action)'} is for a service the rehearsal does not serve`,
    };
  const accesses =
    service === 'dynamodb'
      ? dynamodbAccesses(operation, input, context)
      : service === 'sqs'
        ? sqsAccesses(operation, input, context)
        : statesAccesses(operation, input);
  if (typeof accesses === 'string') return { unreadable: accesses };
  return { service, operation, input, accesses };
}

function leadingKeyContext(values: Array<string | undefined>): Record<string, string[]> {
  const known = values.filter((value): value is string => value !== undefined);
  return { 'dynamodb:LeadingKeys': [...new Set(known)] };
}

/** The value a KeyConditionExpression fixes the partition key to (`#pk = :pk`), if any. */
function queriedPartitionValue(input: Record<string, unknown>, partitionKey: string): string | undefined {
  const names = (input.ExpressionAttributeNames ?? {}) as Record<string, string>;
  const values = (input.ExpressionAttributeValues ?? {}) as Item;
  const expression = String(input.KeyConditionExpression ?? '');
  for (const match of expression.matchAll(/([#\w.]+)\s*=\s*(:\w+)/g)) {
    const name = names[match[1] as string] ?? match[1];
    if (name === partitionKey) return scalar(values[match[2] as string]);
  }
  const legacy = (input.KeyConditions ?? {}) as Record<string, { AttributeValueList?: AttributeValue[] }>;
  return scalar(legacy[partitionKey]?.AttributeValueList?.[0]);
}

const itemActions = {
  Put: 'PutItem',
  Update: 'UpdateItem',
  Delete: 'DeleteItem',
  ConditionCheck: 'ConditionCheckItem',
  Get: 'GetItem',
} as const;

function dynamodbAccesses(
  operation: string,
  input: Record<string, unknown>,
  context: CallContext,
): AccessRequest[] | string {
  const keysOf = (tableName: unknown) => {
    const keys = context.tableKeys(String(tableName));
    return (
      keys ?? {
        tableArn: `arn:${context.partition}:dynamodb:${context.region}:${context.account}:table/${tableName}`,
        partitionKey: '',
        indexPartitionKeys: {},
      }
    );
  };
  const extra: Record<string, string> = {};
  if (typeof input.ReturnValues === 'string') extra['dynamodb:ReturnValues'] = input.ReturnValues;
  if (typeof input.Select === 'string') extra['dynamodb:Select'] = input.Select;
  if (typeof input.ReturnConsumedCapacity === 'string')
    extra['dynamodb:ReturnConsumedCapacity'] = input.ReturnConsumedCapacity;
  switch (operation) {
    case 'GetItem':
    case 'PutItem':
    case 'UpdateItem':
    case 'DeleteItem': {
      const keys = keysOf(input.TableName);
      const item = (input.Key ?? input.Item ?? {}) as Item;
      return [
        {
          action: `dynamodb:${operation}`,
          resource: keys.tableArn,
          context: { ...extra, ...leadingKeyContext([scalar(item[keys.partitionKey])]) },
        },
      ];
    }
    case 'Query':
    case 'Scan': {
      const keys = keysOf(input.TableName);
      const index = typeof input.IndexName === 'string' ? input.IndexName : undefined;
      const resource = index ? `${keys.tableArn}/index/${index}` : keys.tableArn;
      const partitionKey = index ? keys.indexPartitionKeys[index] : keys.partitionKey;
      const leading =
        operation === 'Query' && partitionKey
          ? leadingKeyContext([queriedPartitionValue(input, partitionKey)])
          : {};
      return [{ action: `dynamodb:${operation}`, resource, context: { ...extra, ...leading } }];
    }
    case 'BatchGetItem':
    case 'BatchWriteItem': {
      const requests = (input.RequestItems ?? {}) as Record<string, unknown>;
      return Object.entries(requests).map(([tableName, entries]) => {
        const keys = keysOf(tableName);
        const items =
          operation === 'BatchGetItem'
            ? ((entries as { Keys?: Item[] }).Keys ?? [])
            : (entries as Array<{ PutRequest?: { Item: Item }; DeleteRequest?: { Key: Item } }>).map(
                (entry) => entry.PutRequest?.Item ?? entry.DeleteRequest?.Key ?? {},
              );
        return {
          action: `dynamodb:${operation}`,
          resource: keys.tableArn,
          context: { ...extra, ...leadingKeyContext(items.map((item) => scalar(item[keys.partitionKey]))) },
        };
      });
    }
    case 'TransactWriteItems':
    case 'TransactGetItems': {
      const items = (input.TransactItems ?? []) as Array<
        Record<string, { TableName: string; Key?: Item; Item?: Item }>
      >;
      return items.flatMap((entry) =>
        Object.entries(entry).map(([kind, part]) => {
          const keys = keysOf(part.TableName);
          const item = part.Key ?? part.Item ?? {};
          return {
            action: `dynamodb:${itemActions[kind as keyof typeof itemActions] ?? kind}`,
            resource: keys.tableArn,
            context: {
              ...leadingKeyContext([scalar(item[keys.partitionKey])]),
              'dynamodb:EnclosingOperation': operation,
            },
          };
        }),
      );
    }
    case 'ListTables':
      return [{ action: 'dynamodb:ListTables', resource: '*' }];
    default:
      if (typeof input.TableName === 'string')
        return [{ action: `dynamodb:${operation}`, resource: keysOf(input.TableName).tableArn }];
      return `DynamoDB ${operation} is an operation the rehearsal cannot read`;
  }
}

const sqsBatchActions: Record<string, string> = {
  SendMessageBatch: 'SendMessage',
  DeleteMessageBatch: 'DeleteMessage',
  ChangeMessageVisibilityBatch: 'ChangeMessageVisibility',
};

function sqsAccesses(
  operation: string,
  input: Record<string, unknown>,
  context: CallContext,
): AccessRequest[] | string {
  const action = `sqs:${sqsBatchActions[operation] ?? operation}`;
  if (operation === 'ListQueues') return [{ action, resource: '*' }];
  let name: string | undefined;
  let account = context.account;
  if (typeof input.QueueUrl === 'string') {
    const parts = new URL(input.QueueUrl).pathname.split('/').filter(Boolean);
    [account = context.account, name] = parts.slice(-2);
  } else if (typeof input.QueueName === 'string') {
    name = input.QueueName;
    if (typeof input.QueueOwnerAWSAccountId === 'string') account = input.QueueOwnerAWSAccountId;
  }
  if (!name) return `SQS ${operation} names no queue the rehearsal can read`;
  return [{ action, resource: `arn:${context.partition}:sqs:${context.region}:${account}:${name}` }];
}

function statesAccesses(operation: string, input: Record<string, unknown>): AccessRequest[] | string {
  const arn = input.stateMachineArn ?? input.executionArn ?? input.activityArn ?? input.mapRunArn;
  if (typeof arn !== 'string') return `Step Functions ${operation} names no ARN the rehearsal can read`;
  return [{ action: `states:${operation}`, resource: arn }];
}
