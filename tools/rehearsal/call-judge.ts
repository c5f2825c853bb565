import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RecordedCall } from '../../lib/local/call-record.ts';
import { functionSpecs } from '../../lib/server/functions/table.ts';
import { localResourceNames, type ResourceNames } from '../../lib/server/setup/resources.ts';
import { displayName } from './assembly.ts';
import { type CallContext, readAwsCall, type TableKeys } from './aws-requests.ts';
import type { AccessRequest, Principal } from './iam-check.ts';
import { RehearsalProblem } from './problems.ts';
import type { JudgedStack, StackFunction } from './stack.ts';

/** Where each local table and queue is in the CDK app: the template's resource standing for it. */
const templatePaths: Readonly<Record<keyof ResourceNames, string>> = {
  inventoryTable: 'Tables/Inventory',
  identityTable: 'Tables/Identity',
  controlQueue: 'ControlQueue/Control',
  deadLetterQueue: 'ControlQueue/DeadLetter',
};

export type CallVerdict = {
  /** Calls read from the records (SDK calls and the local stand-ins' calls). */
  readonly calls: number;
  /** Decisions of the embedded broker, each judged again by IAM's evaluator. */
  readonly brokerDecisions: number;
  /** One line per distinct call denied or decision that disagrees: who, what, on what, why. */
  readonly findings: readonly string[];
  /** Functions of the template no recorded call was made as. */
  readonly silent: readonly string[];
};

/** Every call recorded in a folder (lib/local/call-record.ts writes one file per process). */
export function readRecords(folder: string): RecordedCall[] {
  if (!existsSync(folder)) return [];
  return readdirSync(folder)
    .filter((file) => file.endsWith('.jsonl'))
    .flatMap((file) => readFileSync(join(folder, file), 'utf8').split('\n'))
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as RecordedCall);
}

/**
 * Judges recorded calls against the synthesized stack: each call a function made, with the
 * local table and queue names read as the template's, against the policies of that function's
 * role (and the resource's own policy); each decision of the embedded broker against IAM's
 * evaluator given the same policy documents the authorizer answered.
 */
export async function judgeCalls(stack: JudgedStack, records: readonly RecordedCall[]): Promise<CallVerdict> {
  const findings = new Set<string>();
  const seen = new Set<string>();
  const judged = new Set<string>();
  let calls = 0;
  let brokerDecisions = 0;
  const names = templateNames(stack);
  const env = stack.references.environment;
  const context: CallContext = {
    region: env.region,
    account: env.account,
    partition: env.partition,
    tableKeys: (name) => names.table(name),
  };
  for (const record of records) {
    if ('broker' in record) {
      brokerDecisions += 1;
      const key = JSON.stringify(record);
      if (judged.has(key)) continue;
      judged.add(key);
      const finding = await judgeBrokerDecision(stack, record);
      if (finding) findings.add(finding);
      continue;
    }
    calls += 1;
    seen.add(record.fn);
    const fn = stack.functions.get(record.fn);
    if (!fn) {
      findings.add(`${record.fn} made AWS calls, but the template has no function of that row`);
      continue;
    }
    let accesses: AccessRequest[];
    try {
      accesses = accessesOf(stack, record, context, names);
    } catch (error) {
      if (!(error instanceof RehearsalProblem)) throw error;
      findings.add(`${fn.displayName}: ${error.message}`);
      continue;
    }
    for (const access of accesses) {
      const key = JSON.stringify([fn.name, access]);
      if (judged.has(key)) continue;
      judged.add(key);
      const decision = await stack.iam.authorize(principalOf(stack, fn), access);
      if (!decision.allowed)
        findings.add(
          `denied: ${fn.displayName} called ${access.action} on ${access.resource}: ${decision.reason}`,
        );
    }
  }
  const silent = [...stack.functions.values()]
    .filter((fn) => !seen.has(fn.name))
    .map((fn) => fn.displayName)
    .sort();
  return { calls, brokerDecisions, findings: [...findings], silent };
}

const principalOf = (stack: JudgedStack, fn: StackFunction): Principal => ({
  kind: 'role',
  roleLogicalId: fn.roleLogicalId,
  session: stack.references.identity(fn.logicalId)?.ref ?? fn.name,
  label: fn.displayName,
});

type TemplateNames = {
  table(localName: string): TableKeys | undefined;
  queueArn(localName: string): string | undefined;
};

/** Reads a local table or queue name (any prefix: tests and beds use their own) as the template's resource. */
function templateNames(stack: JudgedStack): TemplateNames {
  const suffixes = Object.entries(localResourceNames('')) as Array<[keyof ResourceNames, string]>;
  // A run names the same few dozen tables and queues in thousands of calls, and each lookup
  // walks the whole template.
  const known = new Map<string, string | undefined>();
  const logicalIdOf = (localName: string) => {
    if (known.has(localName)) return known.get(localName);
    const found = suffixes.find(([, suffix]) => localName.endsWith(suffix));
    const physical = found ? stack.physicalName(templatePaths[found[0]]) : undefined;
    const id =
      stack.references.logicalIdFor(localName) ??
      (physical ? stack.references.logicalIdFor(physical) : undefined);
    known.set(localName, id);
    return id;
  };
  return {
    table(localName) {
      const id = logicalIdOf(localName);
      const table = id ? stack.assembly.template.Resources[id] : undefined;
      if (!id || !table?.Type.startsWith('AWS::DynamoDB::')) return undefined;
      type Key = { AttributeName: string; KeyType: string };
      const hashOf = (schema: unknown) =>
        (schema as Key[]).find((key) => key.KeyType === 'HASH')?.AttributeName;
      const indexes = (table.Properties?.GlobalSecondaryIndexes ?? []) as Array<{
        IndexName: string;
        KeySchema: Key[];
      }>;
      return {
        tableArn: stack.references.identity(id)?.attributes.Arn as string,
        partitionKey: hashOf(table.Properties?.KeySchema) ?? '',
        indexPartitionKeys: Object.fromEntries(
          indexes.map((index) => [index.IndexName, hashOf(index.KeySchema) ?? '']),
        ),
      };
    },
    queueArn(localName) {
      const id = logicalIdOf(localName);
      return id ? stack.references.identity(id)?.attributes.Arn : undefined;
    },
  };
}

function accessesOf(
  stack: JudgedStack,
  record: Extract<RecordedCall, { fn: string }>,
  context: CallContext,
  names: TemplateNames,
): AccessRequest[] {
  const env = stack.references.environment;
  if ('target' in record) {
    const call = readAwsCall({ 'x-amz-target': record.target }, record.body, context);
    if ('unreadable' in call) throw new RehearsalProblem('iam', call.unreadable);
    return call.accesses.map((access) => {
      if (access.resource.startsWith(`arn:${env.partition}:sqs:`)) {
        const local = access.resource.split(':').at(-1) as string;
        const arn = names.queueArn(local);
        if (!arn)
          throw new RehearsalProblem(
            'iam',
            `${call.operation} names ${local}, which is no queue of the stack`,
          );
        return { ...access, resource: arn };
      }
      const table = /:dynamodb:.*:table\/([^/]+)/.exec(access.resource)?.[1];
      if (table && !names.table(table))
        throw new RehearsalProblem('iam', `${call.operation} names ${table}, which is no table of the stack`);
      return access;
    });
  }
  if (record.stand === 'iot:Publish') {
    const resource = `arn:${env.partition}:iot:${env.region}:${env.account}:topic/${record.topic}`;
    return [
      { action: 'iot:Publish', resource },
      ...(record.retain ? [{ action: 'iot:RetainPublish', resource }] : []),
    ];
  }
  if (record.stand === 'states:StartExecution') {
    const template = stack.assembly.template;
    const machine = Object.keys(template.Resources).find(
      (id) =>
        template.Resources[id]?.Type === 'AWS::StepFunctions::StateMachine' &&
        displayName(template, id).startsWith(`${record.flow}/`),
    );
    const arn = machine ? stack.references.identity(machine)?.attributes.Arn : undefined;
    if (!arn) throw new RehearsalProblem('iam', `states:StartExecution: the template has no ${record.flow}`);
    return [{ action: 'states:StartExecution', resource: arn }];
  }
  const target =
    record.stand === 'states:StartSyncExecution'
      ? Object.keys(stack.assembly.template.Resources).find(
          (id) => stack.assembly.template.Resources[id]?.Type === 'AWS::StepFunctions::StateMachine',
        )
      : stack.functions.get('push-run')?.logicalId;
  const arn = target ? stack.references.identity(target)?.attributes.Arn : undefined;
  if (!arn)
    throw new RehearsalProblem('iam', `${record.stand}: the template has nothing it could be made on`);
  return [{ action: record.stand, resource: arn }];
}

async function judgeBrokerDecision(
  stack: JudgedStack,
  record: Extract<RecordedCall, { broker: string }>,
): Promise<string | undefined> {
  const documents = record.policies as Parameters<JudgedStack['iam']['judge']>[0];
  const env = stack.references.environment;
  const decision = await stack.iam.judge(
    documents,
    `arn:${env.partition}:iam::${env.account}:role/iot-custom-authorizer`,
    { action: record.broker, resource: record.resource },
  );
  if (decision.allowed === record.allowed) return undefined;
  const authorizer = functionSpecs.find((spec) => spec.trigger === 'broker-authorizer')?.name ?? '';
  const answered = stack.functions.get(authorizer)?.displayName ?? 'the authorizer';
  return `the embedded broker ${record.allowed ? 'allowed' : 'refused'} ${record.broker} on ${record.resource}, but IAM's evaluator ${decision.allowed ? 'allows' : 'denies'} it under the ${documents.length} policies ${answered} answered`;
}
