import { describe, expect, it } from 'vitest';
import { type CallContext, readAwsCall } from '../../../tools/rehearsal/aws-requests.ts';

const tableArn = 'arn:aws:dynamodb:eu-west-1:000000000000:table/Mesh-Inventory';
const context: CallContext = {
  region: 'eu-west-1',
  account: '000000000000',
  partition: 'aws',
  tableKeys: (name) =>
    name === 'Mesh-Inventory'
      ? { tableArn, partitionKey: 'pk', indexPartitionKeys: { gsi1: 'gsi1pk' } }
      : undefined,
};
const call = (target: string, input: unknown) =>
  readAwsCall({ 'x-amz-target': target }, JSON.stringify(input), context);

describe('readAwsCall', () => {
  it('reads an item call: its action, its table and the partition key it touches', () => {
    expect(
      call('DynamoDB_20120810.PutItem', { TableName: 'Mesh-Inventory', Item: { pk: { S: 'proof#a' } } }),
    ).toEqual({
      service: 'dynamodb',
      operation: 'PutItem',
      input: expect.any(Object),
      accesses: [
        { action: 'dynamodb:PutItem', resource: tableArn, context: { 'dynamodb:LeadingKeys': ['proof#a'] } },
      ],
    });
  });

  it('reads a query on an index with the index ARN and the key its condition fixes', () => {
    const query = {
      TableName: 'Mesh-Inventory',
      IndexName: 'gsi1',
      KeyConditionExpression: '#p = :p AND begins_with(gsi1sk, :s)',
      ExpressionAttributeNames: { '#p': 'gsi1pk' },
      ExpressionAttributeValues: { ':p': { S: 'mesh#node' }, ':s': { S: 'a' } },
      Select: 'ALL_ATTRIBUTES',
    };
    expect(call('DynamoDB_20120810.Query', query)).toMatchObject({
      accesses: [
        {
          action: 'dynamodb:Query',
          resource: `${tableArn}/index/gsi1`,
          context: { 'dynamodb:LeadingKeys': ['mesh#node'], 'dynamodb:Select': 'ALL_ATTRIBUTES' },
        },
      ],
    });
  });

  it('asks a transaction for each item’s own action, as IAM does', () => {
    const transaction = {
      TransactItems: [
        { Put: { TableName: 'Mesh-Inventory', Item: { pk: { S: 'node#a' } } } },
        { ConditionCheck: { TableName: 'Mesh-Inventory', Key: { pk: { S: 'node#b' } } } },
        { Delete: { TableName: 'Mesh-Inventory', Key: { pk: { S: 'node#c' } } } },
      ],
    };
    const read = call('DynamoDB_20120810.TransactWriteItems', transaction);
    expect('accesses' in read && read.accesses.map((access) => [access.action, access.context])).toEqual([
      [
        'dynamodb:PutItem',
        { 'dynamodb:LeadingKeys': ['node#a'], 'dynamodb:EnclosingOperation': 'TransactWriteItems' },
      ],
      [
        'dynamodb:ConditionCheckItem',
        { 'dynamodb:LeadingKeys': ['node#b'], 'dynamodb:EnclosingOperation': 'TransactWriteItems' },
      ],
      [
        'dynamodb:DeleteItem',
        { 'dynamodb:LeadingKeys': ['node#c'], 'dynamodb:EnclosingOperation': 'TransactWriteItems' },
      ],
    ]);
  });

  it('asks a batch once per table with every partition key it touches', () => {
    const batch = {
      RequestItems: {
        'Mesh-Inventory': { Keys: [{ pk: { S: 'a' } }, { pk: { S: 'b' } }, { pk: { S: 'a' } }] },
      },
    };
    expect(call('DynamoDB_20120810.BatchGetItem', batch)).toMatchObject({
      accesses: [
        {
          action: 'dynamodb:BatchGetItem',
          resource: tableArn,
          context: { 'dynamodb:LeadingKeys': ['a', 'b'] },
        },
      ],
    });
  });

  it('reads the queue from its URL and a batch as its single action', () => {
    const url = 'http://sqs.eu-west-1.aws.localhost:4599/000000000000/Mesh-Control.fifo';
    expect(call('AmazonSQS.ChangeMessageVisibilityBatch', { QueueUrl: url, Entries: [] })).toMatchObject({
      service: 'sqs',
      accesses: [
        {
          action: 'sqs:ChangeMessageVisibility',
          resource: 'arn:aws:sqs:eu-west-1:000000000000:Mesh-Control.fifo',
        },
      ],
    });
    expect(readAwsCall({}, `Action=SendMessage&QueueUrl=${encodeURIComponent(url)}`, context)).toMatchObject({
      accesses: [{ action: 'sqs:SendMessage' }],
    });
  });

  it('reads a Step Functions call by the ARN it names', () => {
    const arn = 'arn:aws:states:eu-west-1:000000000000:stateMachine:push';
    expect(call('AWSStepFunctions.StartSyncExecution', { stateMachineArn: arn, input: '{}' })).toMatchObject({
      service: 'states',
      accesses: [{ action: 'states:StartSyncExecution', resource: arn }],
    });
  });

  it('says what it cannot read rather than let the call through unchecked', () => {
    expect(call('Kinesis_20131202.PutRecord', {})).toEqual({
      unreadable: expect.stringMatching(/Kinesis_20131202.PutRecord/),
    });
    expect(call('DynamoDB_20120810.ExecuteStatement', { Statement: 'SELECT 1' })).toEqual({
      unreadable: 'DynamoDB ExecuteStatement is an operation the rehearsal cannot read',
    });
  });
});
