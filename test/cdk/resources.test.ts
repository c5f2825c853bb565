import { Match, Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { MeshStack } from '../../lib/deploy/mesh-stack.ts';
import { createTableInput, queueAttributes } from '../../lib/local/provision.ts';
import {
  controlQueue,
  deadLetterQueue,
  identityTable,
  inventoryTable,
} from '../../lib/server/setup/resources.ts';
import { templateOf, unbundledApp } from './support.ts';

/** The deployed resources and the local ones come from one description; this holds them together. */
describe('the synthesized template follows lib/server/setup/resources.ts', () => {
  const template = templateOf(new MeshStack(unbundledApp(), 'Mesh'));

  it.each([inventoryTable, identityTable])(
    'table $logicalName has the described keys and indexes',
    (table) => {
      const local = createTableInput(table, 'x');
      template.hasResourceProperties('AWS::DynamoDB::GlobalTable', {
        KeySchema: local.KeySchema,
        AttributeDefinitions: Match.arrayEquals(local.AttributeDefinitions ?? []),
        ...(local.GlobalSecondaryIndexes
          ? {
              GlobalSecondaryIndexes: local.GlobalSecondaryIndexes.map((index) => ({
                IndexName: index.IndexName,
                KeySchema: index.KeySchema,
                Projection: index.Projection,
              })),
            }
          : {}),
        ...(table.timeToLiveAttribute
          ? { TimeToLiveSpecification: { AttributeName: table.timeToLiveAttribute, Enabled: true } }
          : {}),
      });
    },
  );

  it.each([controlQueue, deadLetterQueue])('queue $logicalName has the described attributes', (queue) => {
    const local = queueAttributes(queue, 'arn:aws:sqs:us-east-1:000000000000:dead.fifo');
    const properties: Record<string, unknown> = {
      FifoQueue: true,
      ContentBasedDeduplication: local.ContentBasedDeduplication === 'true',
      VisibilityTimeout: Number(local.VisibilityTimeout),
      MessageRetentionPeriod: Number(local.MessageRetentionPeriod),
      MaximumMessageSize: Number(local.MaximumMessageSize),
      DeduplicationScope: local.DeduplicationScope,
      FifoThroughputLimit: local.FifoThroughputLimit,
    };
    if (local.RedrivePolicy) {
      properties.RedrivePolicy = {
        deadLetterTargetArn: Match.anyValue(),
        maxReceiveCount: queue.deadLetter?.maxReceiveCount,
      };
    }
    template.hasResourceProperties('AWS::SQS::Queue', properties);
  });

  it('makes the control queue high-throughput FIFO: throughput and deduplication per subject', () => {
    expect(queueAttributes(controlQueue)).toMatchObject({
      DeduplicationScope: 'messageGroup',
      FifoThroughputLimit: 'perMessageGroupId',
    });
  });

  it('makes exactly the described tables and queues', () => {
    expect(Object.keys(template.findResources('AWS::DynamoDB::GlobalTable'))).toHaveLength(2);
    expect(Object.keys(template.findResources('AWS::SQS::Queue'))).toHaveLength(2);
  });
});
