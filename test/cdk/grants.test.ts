import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { MeshStack } from '../../lib/deploy/mesh-stack.ts';
import { accessesOf } from '../../lib/server/functions/spec.ts';
import type { Access } from '../../lib/server/functions/table.ts';
import { functionSpecs } from '../../lib/server/functions/table.ts';
import { grantsOf, logicalId, templateOf, unbundledAppAsSynthesized } from './support.ts';

/** The real manifest's stack with cdk.json's flags, unbundled: grants are read from the template. */
const stack = new MeshStack(unbundledAppAsSynthesized(), 'Mesh');
const template = templateOf(stack);
const names = {
  [logicalId(stack, stack.tables.inventory)]: 'inventory',
  [logicalId(stack, stack.tables.identity)]: 'identity',
  [logicalId(stack, stack.control.queue)]: 'control',
  [logicalId(stack, stack.control.deadLetterQueue)]: 'deadLetter',
  [logicalId(stack, stack.releases.bucket)]: 'releases',
  [logicalId(stack, stack.pushFlow.stateMachine)]: 'pushFlow',
  [logicalId(stack, stack.events.bus)]: 'eventBus',
  ...(stack.rolloutFlow ? { [logicalId(stack, stack.rolloutFlow.stateMachine)]: 'rolloutFlow' } : {}),
  ...(stack.applyFlow ? { [logicalId(stack, stack.applyFlow.stateMachine)]: 'applyFlow' } : {}),
  ...Object.fromEntries(
    [...stack.functions.functions].map(([name, fn]) => [logicalId(stack, fn), `function:${name}`]),
  ),
};
const roleOf = (name: string) => logicalId(stack, stack.functions.roles.get(name) as never);
/** The role's grants but its logs and traces, which every function has. */
const grantsOfFunction = (name: string) =>
  grantsOf(template, roleOf(name), names).filter((line) => !/^(logs|xray):/.test(line));
const dynamodb = (lines: string[]) => lines.filter((line) => line.startsWith('dynamodb:'));

const each = (actions: readonly string[], target: string, partitions?: string) =>
  actions.map((action) => `${action} ${target}${partitions ? ` ${partitions}` : ''}`);
const dynamodbActions = (...names: string[]) => names.map((name) => `dynamodb:${name}`);
const reads = dynamodbActions('GetItem', 'BatchGetItem', 'Query');
const writes = dynamodbActions('PutItem', 'UpdateItem', 'DeleteItem', 'ConditionCheckItem');
const nodes = 'node#*';

/** What each access must grant, written out here apart from lib/deploy/grants.ts. */
const grantsOfAccess: Record<Access, string[]> = {
  'audit:refusals': each(['dynamodb:UpdateItem'], 'inventory', 'audit#refused#*'),
  'audit:write': each(['dynamodb:GetItem', 'dynamodb:PutItem'], 'inventory', 'audit#*'),
  'audit:read': [
    ...each(['dynamodb:GetItem', 'dynamodb:Query'], 'inventory', 'audit#*'),
    ...each(['dynamodb:Query'], 'inventory/index/gsi1', 'audit#day#*'),
  ],
  'inventory:read': each(reads, 'inventory'),
  'inventory:list': each(['dynamodb:Query'], 'inventory/index/gsi1', 'mesh#node'),
  'inventory:views': each(['dynamodb:Query'], 'inventory/index/gsi2', 'view#*'),
  'inventory:scan': each(['dynamodb:Scan'], 'inventory'),
  'inventory:write': each(writes, 'inventory'),
  'rollouts:parts': each(['dynamodb:BatchWriteItem'], 'inventory', 'rollout#*'),
  'proofs:write': each(['dynamodb:PutItem'], 'inventory', 'proof#*'),
  'pushes:write': each(['dynamodb:PutItem'], 'inventory', 'pushes'),
  'pushes:progress': each(['dynamodb:UpdateItem'], 'inventory', 'pushes'),
  'pushWork:keep': each(['dynamodb:BatchWriteItem', 'dynamodb:Query'], 'inventory', 'pushwork#*'),
  'applyJobs:plan': each(['dynamodb:BatchWriteItem'], 'inventory', 'mesh#apply-job#*'),
  'presence:write': each(['dynamodb:UpdateItem', 'dynamodb:ConditionCheckItem'], 'inventory', nodes),
  'nodeKeys:verify': each(['dynamodb:BatchGetItem'], 'identity', nodes),
  'deliveries:read': each(['dynamodb:GetItem'], 'inventory', `${nodes},declaration#*`),
  'tokens:issue': each(
    ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:ConditionCheckItem'],
    'inventory',
    nodes,
  ),
  'tokens:revoke': each(['dynamodb:GetItem', 'dynamodb:UpdateItem'], 'inventory', nodes),
  'tokens:enrol': [
    ...each(['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:PutItem'], 'inventory', nodes),
    ...each(['dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:DeleteItem'], 'identity', nodes),
  ],
  'hostIdentity:revoke': [
    ...each(['dynamodb:GetItem', 'dynamodb:DeleteItem', 'dynamodb:ConditionCheckItem'], 'inventory', nodes),
    ...each(['dynamodb:Query', 'dynamodb:DeleteItem'], 'identity', nodes),
  ],
  'keys:rotate': [
    ...each(['dynamodb:GetItem', 'dynamodb:UpdateItem'], 'inventory', nodes),
    ...each(
      ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:Query', 'dynamodb:DeleteItem'],
      'identity',
      nodes,
    ),
  ],
  'control:send': each(['sqs:SendMessage'], 'control'),
  'control:consume': each(
    ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes', 'sqs:ChangeMessageVisibility'],
    'control',
  ),
  'deadLetter:send': each(['sqs:SendMessage'], 'deadLetter'),
  'deadLetter:inspect': each(['sqs:GetQueueAttributes'], 'deadLetter'),
  'pushFlow:start': each(['states:StartSyncExecution'], 'pushFlow'),
  'rolloutFlow:start': each(['states:StartExecution', 'states:ListExecutions'], 'rolloutFlow'),
  'applyFlow:start': each(['states:StartExecution'], 'applyFlow'),
  'pushRun:invoke': each(['lambda:InvokeFunction'], 'function:push-run'),
  'events:put': each(['events:PutEvents'], 'eventBus'),
  'releases:upload': each(['s3:PutObject'], 'releases'),
  'releases:read': each(['s3:GetObject', 's3:ListBucket'], 'releases'),
  'signal:publish': each(['iot:Publish', 'iot:RetainPublish'], 'topic/mesh/nodes/*/signal'),
  'summary:read': each(['dynamodb:GetItem', 'dynamodb:Query'], 'inventory', 'summary#*'),
  'summary:count': [
    ...each(
      ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:UpdateItem', 'dynamodb:PutItem'],
      'inventory',
      'summary#*',
    ),
    // the stream's ARN is the table's attribute, named here as the table
    ...each(
      ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator', 'dynamodb:ListStreams'],
      'inventory',
    ),
  ],
  'summary:rebuild': [
    ...each(['dynamodb:Scan'], 'inventory'),
    ...each(
      [
        'dynamodb:GetItem',
        'dynamodb:Query',
        'dynamodb:UpdateItem',
        'dynamodb:PutItem',
        'dynamodb:DeleteItem',
      ],
      'inventory',
      'summary#*',
    ),
  ],
};

describe('the grants of the deployed roles', () => {
  it('are exactly what each manifest row’s accesses grant, nothing more', () => {
    for (const spec of functionSpecs) {
      const expected = [...new Set(accessesOf(spec).flatMap((access) => grantsOfAccess[access]))].sort();
      expect(grantsOfFunction(spec.name), spec.name).toEqual(expected);
    }
  });

  it('hold no DynamoDB or SQS action that no code calls, and nothing on an index but the node list and the sparse view lists', () => {
    const all = functionSpecs.flatMap((spec) => grantsOfFunction(spec.name));
    // The mesh file's routes and the apply flow's step alone read the whole mesh
    // (lib/server/adapters/mesh-file/live-mesh-reader.ts), and the summary's rebuild (docs/decisions/summary-from-the-stream.md).
    const scanners = functionSpecs
      .filter((spec) => grantsOfFunction(spec.name).some((line) => line.includes(':Scan ')))
      .map((spec) => spec.name);
    expect(scanners.sort()).toEqual([
      'mesh-apply',
      'mesh-apply-advance',
      'mesh-apply-prune',
      'mesh-export',
      'mesh-plan',
      'mesh-summary-rebuild',
    ]);
    for (const unused of ['DescribeTable', 'GetQueueUrl'])
      expect(all.filter((line) => line.includes(`:${unused} `))).toEqual([]);
    // batches of writes only where a rollout keeps its waves' parts (rollout-chunks.ts), a
    // push its node lists (push-work.ts) and an apply job its plan's slices (apply-jobs.ts)
    expect([...new Set(all.filter((line) => line.includes(':BatchWriteItem ')))].sort()).toEqual([
      'dynamodb:BatchWriteItem inventory mesh#apply-job#*',
      'dynamodb:BatchWriteItem inventory pushwork#*',
      'dynamodb:BatchWriteItem inventory rollout#*',
    ]);
    // the stream is read by the summary's aggregator alone (its event source mapping)
    const streamReaders = functionSpecs
      .filter((spec) =>
        grantsOfFunction(spec.name).some((line) => /:(GetRecords|GetShardIterator) /.test(line)),
      )
      .map((spec) => spec.name);
    expect(streamReaders).toEqual(['summary-aggregator']);
    const onIndexes = [...new Set(all.filter((line) => line.includes('/index/')))];
    expect(onIndexes.sort()).toEqual([
      'dynamodb:Query inventory/index/gsi1 audit#day#*',
      'dynamodb:Query inventory/index/gsi1 mesh#node',
      'dynamodb:Query inventory/index/gsi2 view#*',
    ]);
  });

  it('let the host routes and the broker’s authorizer read node keys only, and write only proof ids and refusals', () => {
    expect(dynamodb(grantsOfFunction('host-authorizer'))).toEqual(['dynamodb:BatchGetItem identity node#*']);
    expect(dynamodb(grantsOfFunction('signal-authorizer'))).toEqual([
      'dynamodb:BatchGetItem identity node#*',
      'dynamodb:PutItem inventory proof#*',
    ]);
    expect(dynamodb(grantsOfFunction('host-report'))).toEqual([
      'dynamodb:BatchGetItem identity node#*',
      'dynamodb:PutItem inventory proof#*',
      'dynamodb:UpdateItem inventory audit#refused#*',
    ]);
  });

  it('let host-declaration read a node’s items and its declaration’s parts by key alone: no Query, Scan or batch on the inventory', () => {
    expect(dynamodb(grantsOfFunction('host-declaration'))).toEqual([
      'dynamodb:BatchGetItem identity node#*',
      'dynamodb:GetItem inventory node#*,declaration#*',
      'dynamodb:PutItem inventory proof#*',
      'dynamodb:UpdateItem inventory audit#refused#*',
    ]);
  });

  it('let enrol claim and spend the named node’s token and store its keys, in node partitions only, and write its audit record', () => {
    expect(dynamodb(grantsOfFunction('enrol'))).toEqual([
      'dynamodb:DeleteItem identity node#*',
      'dynamodb:GetItem inventory audit#*',
      'dynamodb:GetItem inventory node#*',
      'dynamodb:PutItem identity node#*',
      'dynamodb:PutItem inventory audit#*',
      'dynamodb:PutItem inventory node#*',
      'dynamodb:Query identity node#*',
      'dynamodb:UpdateItem inventory audit#refused#*',
      'dynamodb:UpdateItem inventory node#*',
    ]);
  });

  it('let push-find-behind read, and write nothing but a push record’s progress and the push’s work', () => {
    expect(dynamodb(grantsOfFunction('push-find-behind'))).toEqual([
      'dynamodb:BatchGetItem inventory',
      'dynamodb:BatchWriteItem inventory pushwork#*',
      'dynamodb:GetItem inventory',
      'dynamodb:Query inventory',
      'dynamodb:Query inventory pushwork#*',
      'dynamodb:Query inventory/index/gsi1 mesh#node',
      'dynamodb:UpdateItem inventory pushes',
    ]);
  });

  it('let mesh-push start push-run and nothing else, and push-run start the flow', () => {
    const lambda = (name: string) => grantsOfFunction(name).filter((line) => /^(lambda|states):/.test(line));
    expect([lambda('mesh-push'), lambda('push-run')]).toEqual([
      ['lambda:InvokeFunction function:push-run'],
      ['states:StartSyncExecution pushFlow'],
    ]);
  });

  it('let push-run invoke itself alone, by its function’s policy, to hand a push on', () => {
    const permissions = Object.values(template.findResources('AWS::Lambda::Permission')).filter((resource) =>
      JSON.stringify(resource.Properties.Principal).includes(roleOf('push-run')),
    );
    expect(
      permissions.map((resource) => [resource.Properties.Action, resource.Properties.FunctionName]),
    ).toEqual([
      ['lambda:InvokeFunction', { 'Fn::GetAtt': [logicalId(stack, stack.functions.get('push-run')), 'Arn'] }],
    ]);
  });

  it('let the push flow invoke its three functions by their ARNs, no version or alias', () => {
    const machineRole = logicalId(stack, stack.pushFlow.stateMachine.role as never);
    const invoke = grantsOf(template, machineRole, names).filter((line) => line.startsWith('lambda:'));
    expect(invoke).toEqual([
      'lambda:InvokeFunction function:push-begin',
      'lambda:InvokeFunction function:push-find-behind',
      'lambda:InvokeFunction function:push-send',
    ]);
  });
});
