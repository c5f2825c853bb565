import { type CfnElement, Names, Stack, Token } from 'aws-cdk-lib';
import type { ITableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { type IRole, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { refusedPartitions } from '../server/adapters/audit/audit-refusals.ts';
import { auditDayPartitions, auditPartitions } from '../server/adapters/audit/audit-trail.ts';
import { partsPartition } from '../server/adapters/dynamodb/declaration-parts.ts';
import { nodePartition } from '../server/adapters/dynamodb/keys.ts';
import { allNodesIndex } from '../server/adapters/dynamodb/mesh-items.ts';
import { proofItemsLeadingKey } from '../server/adapters/host-identity/proof-replay-guard.ts';
import { applyJobPartitions } from '../server/adapters/mesh-file/apply-jobs.ts';
import { pushesPartition } from '../server/adapters/push/push-records.ts';
import { pushWorkPartitions } from '../server/adapters/push/push-work.ts';
import { rolloutPartsPartitions } from '../server/adapters/rollout/rollout-chunks.ts';
import { summaryPartitions } from '../server/adapters/summary/summary-store.ts';
import { nodeTopics } from '../server/core/signal/channel.ts';
import type { Access, FunctionSpec } from '../server/functions/table.ts';
import { inventoryTable } from '../server/setup/resources.ts';
import { acknowledge, arnInFinding } from './nag.ts';

/** What a row's accesses are granted on. */
export type GrantedResources = {
  readonly inventoryTable: ITableV2;
  readonly identityTable: ITableV2;
  readonly controlQueue: IQueue;
  readonly deadLetterQueue: IQueue;
  /** The agent's executables (release-bucket.ts). */
  readonly releaseBucket: IBucket;
};

/** Every node's signal topic, and nothing else: what `signal:publish` allows. */
export const signalTopicsArn = (
  stack: Stack,
  form: (value: string, pseudo: string) => string = (value) => value,
) =>
  `arn:${form(stack.partition, 'AWS::Partition')}:iot:${form(stack.region, 'AWS::Region')}:${form(stack.account, 'AWS::AccountId')}:topic/${nodeTopics('*')}/signal`;

/** How cdk-nag writes a pseudo parameter in a finding. */
const inFinding = (value: string, pseudo: string) => (Token.isUnresolved(value) ? `<${pseudo}>` : value);

/** The partition keys of every node's items (`node#<name>`), in both tables. */
export const nodePartitions = nodePartition('*');
/** The index partitions of the views' sparse lists (`view#failed`, `view#offline`). */
const sparseViews = 'view#*';

/**
 * The DynamoDB calls Mesh's adapters make, and nothing else: reads are GetItem, BatchGetItem
 * and Query; writes are PutItem, UpdateItem, DeleteItem and the ConditionCheck a transaction
 * holds (TransactWriteItems is judged item by item against these); the inventory's indexes are
 * queried for the list of every node and the sparse lists of failed and offline nodes only; the table is scanned by the mesh file's routes only
 * (the whole live mesh). No BatchWriteItem, DescribeTable or stream read serves any code.
 */
type TableGrant = {
  readonly table: 'inventory' | 'identity';
  readonly actions: readonly string[];
  /** The partition keys the calls may touch (`dynamodb:LeadingKeys`); every partition when absent. */
  readonly partitions?: string | readonly string[];
  /** The calls go to this index of the table, not the table. */
  readonly onIndex?: string;
};

const reads = ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query'];
const writes = [
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
  'dynamodb:ConditionCheckItem',
];

const tableGrants: Partial<Record<Access, readonly TableGrant[]>> = {
  'summary:read': [
    { table: 'inventory', actions: ['dynamodb:GetItem', 'dynamodb:Query'], partitions: summaryPartitions },
  ],
  'summary:count': [
    {
      table: 'inventory',
      // Query: the shards' counter items, folded into the mesh-wide ones when a shard goes quiet
      actions: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:UpdateItem', 'dynamodb:PutItem'],
      partitions: summaryPartitions,
    },
  ],
  'summary:rebuild': [
    { table: 'inventory', actions: ['dynamodb:Scan'] },
    {
      table: 'inventory',
      actions: [
        'dynamodb:GetItem',
        'dynamodb:Query',
        'dynamodb:UpdateItem',
        'dynamodb:PutItem',
        'dynamodb:DeleteItem',
      ],
      partitions: summaryPartitions,
    },
  ],
  'audit:refusals': [{ table: 'inventory', actions: ['dynamodb:UpdateItem'], partitions: refusedPartitions }],
  // A chain's head read and its record, head and entry put in the change's transaction (audit-trail.ts).
  'audit:write': [
    { table: 'inventory', actions: ['dynamodb:GetItem', 'dynamodb:PutItem'], partitions: auditPartitions },
  ],
  'audit:read': [
    { table: 'inventory', actions: ['dynamodb:GetItem', 'dynamodb:Query'], partitions: auditPartitions },
    { table: 'inventory', actions: ['dynamodb:Query'], partitions: auditDayPartitions, onIndex: 'gsi1' },
  ],
  'inventory:read': [{ table: 'inventory', actions: reads }],
  'inventory:list': [
    { table: 'inventory', actions: ['dynamodb:Query'], partitions: allNodesIndex, onIndex: 'gsi1' },
  ],
  // The sparse lists of failed, offline and unhealthy nodes (lib/server/adapters/views/view-lists.ts).
  'inventory:views': [
    { table: 'inventory', actions: ['dynamodb:Query'], partitions: sparseViews, onIndex: 'gsi2' },
  ],
  'inventory:scan': [{ table: 'inventory', actions: ['dynamodb:Scan'] }],
  'inventory:write': [{ table: 'inventory', actions: writes }],
  // A rollout's waves are kept in parts, put and deleted in batches (rollout-chunks.ts).
  'rollouts:parts': [
    { table: 'inventory', actions: ['dynamodb:BatchWriteItem'], partitions: rolloutPartsPartitions },
  ],
  'proofs:write': [{ table: 'inventory', actions: ['dynamodb:PutItem'], partitions: proofItemsLeadingKey }],
  'pushes:write': [{ table: 'inventory', actions: ['dynamodb:PutItem'], partitions: pushesPartition }],
  'pushes:progress': [{ table: 'inventory', actions: ['dynamodb:UpdateItem'], partitions: pushesPartition }],
  // A push's node lists, kept while its flow runs, put in batches and read by Query (push-work.ts).
  'pushWork:keep': [
    {
      table: 'inventory',
      actions: ['dynamodb:BatchWriteItem', 'dynamodb:Query'],
      partitions: pushWorkPartitions,
    },
  ],
  // An apply job's plan, kept in slices in its own partition, put in batches (apply-jobs.ts).
  'applyJobs:plan': [
    { table: 'inventory', actions: ['dynamodb:BatchWriteItem'], partitions: applyJobPartitions },
  ],
  'presence:write': [
    {
      table: 'inventory',
      actions: ['dynamodb:UpdateItem', 'dynamodb:ConditionCheckItem'],
      partitions: nodePartitions,
    },
  ],
  'nodeKeys:verify': [{ table: 'identity', actions: ['dynamodb:BatchGetItem'], partitions: nodePartitions }],
  'deliveries:read': [
    {
      table: 'inventory',
      actions: ['dynamodb:GetItem'],
      partitions: [nodePartitions, partsPartition('*')],
    },
  ],
  'tokens:issue': [
    {
      table: 'inventory',
      actions: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:ConditionCheckItem'],
      partitions: nodePartitions,
    },
  ],
  'tokens:revoke': [
    { table: 'inventory', actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], partitions: nodePartitions },
  ],
  'tokens:enrol': [
    {
      table: 'inventory',
      actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:PutItem'],
      partitions: nodePartitions,
    },
    {
      table: 'identity',
      actions: ['dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:DeleteItem'],
      partitions: nodePartitions,
    },
  ],
  'keys:rotate': [
    {
      table: 'inventory',
      actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
      partitions: nodePartitions,
    },
    {
      table: 'identity',
      actions: ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:Query', 'dynamodb:DeleteItem'],
      partitions: nodePartitions,
    },
  ],
  'hostIdentity:revoke': [
    {
      table: 'inventory',
      actions: ['dynamodb:GetItem', 'dynamodb:DeleteItem', 'dynamodb:ConditionCheckItem'],
      partitions: nodePartitions,
    },
    { table: 'identity', actions: ['dynamodb:Query', 'dynamodb:DeleteItem'], partitions: nodePartitions },
  ],
};

/**
 * The IAM statements of one access, fixed here so a row names what it needs and never how it
 * is granted. `pushFlow:start` is granted by MeshFunctions.connectPushFlow once the state
 * machine exists.
 */
export function grantAccess(access: Access, role: IRole, props: GrantedResources): void {
  for (const grant of tableGrants[access] ?? [])
    for (const statement of tableStatements(grant, props)) role.addToPrincipalPolicy(statement);
  switch (access) {
    case 'control:send':
      props.controlQueue.grant(role, 'sqs:SendMessage');
      return;
    case 'control:consume':
      // what the event source mapping needs (checked when it is created) and the consumer's holds
      props.controlQueue.grant(
        role,
        'sqs:ReceiveMessage',
        'sqs:DeleteMessage',
        'sqs:GetQueueAttributes',
        'sqs:ChangeMessageVisibility',
      );
      return;
    case 'deadLetter:send':
      props.deadLetterQueue.grant(role, 'sqs:SendMessage');
      return;
    case 'deadLetter:inspect':
      props.deadLetterQueue.grant(role, 'sqs:GetQueueAttributes');
      return;
    case 'summary:count':
      // what the stream's event source mapping needs, checked when it is created
      props.inventoryTable.grantStreamRead(role);
      return;
    case 'releases:upload':
      // a presigned PUT is made with the signer's own rights: only the executables' keys
      role.addToPrincipalPolicy(
        new PolicyStatement({
          actions: ['s3:PutObject'],
          resources: [props.releaseBucket.arnForObjects('executables/*')],
        }),
      );
      return;
    case 'releases:read':
      // HeadObject (a publish's check) and a presigned GET (a host's download) need s3:GetObject;
      // without s3:ListBucket a missing executable answers 403, not 404. The bucket holds only
      // executables under their digests: listing it tells nothing a release does not.
      role.addToPrincipalPolicy(
        new PolicyStatement({
          actions: ['s3:GetObject'],
          resources: [props.releaseBucket.arnForObjects('executables/*')],
        }),
      );
      role.addToPrincipalPolicy(
        new PolicyStatement({
          actions: ['s3:ListBucket'],
          resources: [props.releaseBucket.bucketArn],
        }),
      );
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
    default:
      // table accesses above; pushFlow:start by connectPushFlow once the state machine exists,
      // rolloutFlow:start by connectRolloutFlow, applyFlow:start by connectApplyFlow,
      // pushRun:invoke by connectPushRunner once every function does, events:put by connectEvents
      // once the bus does
      return;
  }
}

/** The statement of one table grant: on the table, or on its indexes; held to its partitions when it names some. */
function tableStatements(grant: TableGrant, props: GrantedResources): PolicyStatement[] {
  const table = grant.table === 'inventory' ? props.inventoryTable : props.identityTable;
  const indexes = grant.table === 'inventory' ? inventoryTable.globalSecondaryIndexes : [];
  const resources = grant.onIndex
    ? indexes
        .filter((index) => index.indexName === grant.onIndex)
        .map((index) => `${table.tableArn}/index/${index.indexName}`)
    : [table.tableArn];
  const conditions = grant.partitions
    ? { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [grant.partitions].flat() } }
    : undefined;
  return [
    new PolicyStatement({ actions: [...grant.actions], resources, ...(conditions ? { conditions } : {}) }),
  ];
}

/**
 * How cdk-nag names the release bucket's executables in a finding: the bucket's ARN as the role's
 * stack sees it (a nested stack's parameter when the bucket is in its parent) and the key pattern.
 */
function executablesInFinding(role: IRole, bucket: IBucket): string {
  const resource = bucket.node.defaultChild as CfnElement;
  const arn =
    Stack.of(role) === Stack.of(bucket)
      ? arnInFinding(bucket)
      : `<referenceto${Names.uniqueId(resource)}Arn>`;
  return `${arn}/executables/*`;
}

/** The findings a row's grants raise on purpose, each with its reason. */
export function acknowledgeGrantWildcards(role: IRole, spec: FunctionSpec, releaseBucket?: IBucket): void {
  const releases = spec.access.some((access) => access === 'releases:upload' || access === 'releases:read');
  acknowledge(
    role,
    ...(releases && releaseBucket
      ? [
          {
            id: `AwsSolutions-IAM5[Resource::${executablesInFinding(role, releaseBucket)}]`,
            reason: `${spec.name} presigns a transfer of (or reads) whichever executable a release names, kept under its SHA-256; s3:PutObject or s3:GetObject on executables/* only`,
          },
        ]
      : []),
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
  );
}
