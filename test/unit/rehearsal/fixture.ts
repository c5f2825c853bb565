import type { CfnTemplate } from '../../../tools/rehearsal/assembly.ts';
import { identitiesOf, type RehearsalEnvironment } from '../../../tools/rehearsal/identities.ts';
import { References } from '../../../tools/rehearsal/references.ts';

export const environment: RehearsalEnvironment = {
  stackName: 'Mesh',
  region: 'eu-west-1',
  account: '000000000000',
  partition: 'aws',
  urlSuffix: 'amazonaws.com',
};

/**
 * A small stack as the CDK writes one: a table with an index, a FIFO queue with a policy
 * enforcing TLS, and one function whose role may read the table, put only `proof#` items and
 * send to the queue.
 */
export const fixtureTemplate: CfnTemplate = {
  Resources: {
    Table: {
      Type: 'AWS::DynamoDB::GlobalTable',
      Properties: {
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        GlobalSecondaryIndexes: [
          { IndexName: 'gsi1', KeySchema: [{ AttributeName: 'gsi1pk', KeyType: 'HASH' }] },
        ],
      },
    },
    Queue: { Type: 'AWS::SQS::Queue', Properties: { FifoQueue: true } },
    QueuePolicy: {
      Type: 'AWS::SQS::QueuePolicy',
      Properties: {
        Queues: [{ Ref: 'Queue' }],
        PolicyDocument: {
          Statement: [
            {
              Effect: 'Deny',
              Principal: { AWS: '*' },
              Action: 'sqs:*',
              Resource: { 'Fn::GetAtt': ['Queue', 'Arn'] },
              Condition: { Bool: { 'aws:SecureTransport': 'false' } },
            },
          ],
        },
      },
    },
    Role: {
      Type: 'AWS::IAM::Role',
      Properties: {
        AssumeRolePolicyDocument: {
          Statement: [
            { Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' }, Action: 'sts:AssumeRole' },
          ],
        },
      },
    },
    RolePolicy: {
      Type: 'AWS::IAM::Policy',
      Properties: {
        PolicyName: 'RolePolicy',
        Roles: [{ Ref: 'Role' }],
        PolicyDocument: {
          Statement: [
            {
              Effect: 'Allow',
              Action: ['dynamodb:GetItem', 'dynamodb:Query'],
              Resource: [
                { 'Fn::GetAtt': ['Table', 'Arn'] },
                { 'Fn::Join': ['', [{ 'Fn::GetAtt': ['Table', 'Arn'] }, '/index/*']] },
              ],
            },
            {
              Effect: 'Allow',
              Action: 'dynamodb:PutItem',
              Resource: { 'Fn::GetAtt': ['Table', 'Arn'] },
              Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['proof#*'] } },
            },
            { Effect: 'Allow', Action: 'sqs:SendMessage', Resource: { 'Fn::GetAtt': ['Queue', 'Arn'] } },
          ],
        },
      },
    },
    Fn: {
      Type: 'AWS::Lambda::Function',
      Properties: {
        Role: { 'Fn::GetAtt': ['Role', 'Arn'] },
        Environment: { Variables: { TABLE: { Ref: 'Table' }, QUEUE_URL: { Ref: 'Queue' } } },
      },
      Metadata: { 'aws:cdk:path': 'Mesh/Functions/Fn/Resource' },
    },
  },
};

export function fixtureReferences(template: CfnTemplate = fixtureTemplate): References {
  return new References(template, environment, identitiesOf(template, environment));
}
