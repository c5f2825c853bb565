import { Stack, Token } from 'aws-cdk-lib';
import type { ITableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { type IRole, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { proofItemsLeadingKey } from '../adapters/dynamodb/proof-replay-guard.ts';
import { pushesPartition } from '../adapters/dynamodb/push-records.ts';
import { nodeTopics } from '../core/signal/channel.ts';
import type { Access, FunctionSpec } from '../functions.ts';
import { identityTable, inventoryTable } from '../resources.ts';
import { acknowledge, arnInFinding } from './nag.ts';

/** What a row's accesses are granted on. */
export type GrantedResources = {
  readonly inventoryTable: ITableV2;
  readonly identityTable: ITableV2;
  readonly controlQueue: IQueue;
  readonly deadLetterQueue: IQueue;
};

/** Every node's signal topic, and nothing else: what `signal:publish` allows. */
export const signalTopicsArn = (
  stack: Stack,
  form: (value: string, pseudo: string) => string = (value) => value,
) =>
  `arn:${form(stack.partition, 'AWS::Partition')}:iot:${form(stack.region, 'AWS::Region')}:${form(stack.account, 'AWS::AccountId')}:topic/${nodeTopics('*')}/signal`;

/** How cdk-nag writes a pseudo parameter in a finding. */
const inFinding = (value: string, pseudo: string) => (Token.isUnresolved(value) ? `<${pseudo}>` : value);

/**
 * The IAM statements of one access, fixed here so a row names what it needs and never how it
 * is granted. `pushFlow:start` is granted by MeshFunctions.connectPushFlow once the state
 * machine exists.
 */
export function grantAccess(access: Access, role: IRole, props: GrantedResources): void {
  switch (access) {
    case 'inventory:read':
      props.inventoryTable.grantReadData(role);
      return;
    case 'inventory:write':
      props.inventoryTable.grantWriteData(role);
      return;
    case 'proofs:write':
      role.addToPrincipalPolicy(
        new PolicyStatement({
          actions: ['dynamodb:PutItem'],
          resources: [props.inventoryTable.tableArn],
          conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [proofItemsLeadingKey] } },
        }),
      );
      return;
    case 'pushes:write':
      role.addToPrincipalPolicy(
        new PolicyStatement({
          actions: ['dynamodb:PutItem'],
          resources: [props.inventoryTable.tableArn],
          conditions: { 'ForAllValues:StringEquals': { 'dynamodb:LeadingKeys': [pushesPartition] } },
        }),
      );
      return;
    case 'identity:read':
      props.identityTable.grantReadData(role);
      return;
    case 'identity:write':
      props.identityTable.grantWriteData(role);
      return;
    case 'control:send':
      props.controlQueue.grantSendMessages(role);
      return;
    case 'control:consume':
      props.controlQueue.grantConsumeMessages(role);
      return;
    case 'deadLetter:send':
      props.deadLetterQueue.grantSendMessages(role);
      return;
    case 'deadLetter:inspect':
      props.deadLetterQueue.grant(role, 'sqs:GetQueueAttributes');
      return;
    case 'pushFlow:start':
      // granted by connectPushFlow once the state machine exists
      return;
    case 'signal:publish':
      role.addToPrincipalPolicy(
        new PolicyStatement({
          // a retained publish needs iot:RetainPublish too; IoT refuses it otherwise
          actions: ['iot:Publish', 'iot:RetainPublish'],
          resources: [signalTopicsArn(Stack.of(role))],
        }),
      );
      return;
    case 'presence:write':
      role.addToPrincipalPolicy(
        new PolicyStatement({
          actions: ['dynamodb:UpdateItem', 'dynamodb:ConditionCheckItem'],
          resources: [props.inventoryTable.tableArn],
          conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['node#*'] } },
        }),
      );
      return;
  }
}

/** The findings a row's grants raise on purpose, each with its reason. */
export function acknowledgeGrantWildcards(role: IRole, spec: FunctionSpec, props: GrantedResources): void {
  // CDK adds <table>/index/* to a grant only on a table that has indexes
  const tables = [
    {
      area: 'inventory',
      table: props.inventoryTable,
      indexed: inventoryTable.globalSecondaryIndexes.length > 0,
    },
    {
      area: 'identity',
      table: props.identityTable,
      indexed: identityTable.globalSecondaryIndexes.length > 0,
    },
  ] as const;
  acknowledge(
    role,
    ...(spec.access.includes('signal:publish')
      ? [
          {
            id: `AwsSolutions-IAM5[Resource::${signalTopicsArn(Stack.of(role), inFinding)}]`,
            reason: `${spec.name} publishes the signal of whichever node it sends, retained; iot:Publish and iot:RetainPublish on the nodes' signal topics only`,
          },
        ]
      : []),
    {
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'X-Ray PutTraceSegments/PutTelemetryRecords support no resource-level permissions; tracing is on for every function',
    },
    ...tables
      .filter(({ area, indexed }) => indexed && spec.access.some((access) => access.startsWith(`${area}:`)))
      .map(({ area, table }) => ({
        id: `AwsSolutions-IAM5[Resource::${arnInFinding(table)}/index/*]`,
        reason: `${spec.name} has ${area} access; CDK grants it on the table's indexes too, whose ARNs are only known as <table>/index/*`,
      })),
  );
}
