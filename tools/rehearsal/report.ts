import { displayName } from './assembly.ts';
import { isCustomResource } from './custom-resource-identity.ts';
import type { DriveStep } from './drive-clients.ts';
import type { Denial } from './ledger.ts';
import type { RunningRehearsal } from './rehearsal.ts';

/** The resource types the rehearsal runs or checks; others are listed as not rehearsed. */
const rehearsedTypes = new Set([
  'AWS::Lambda::Function',
  'AWS::Lambda::Permission',
  'AWS::Lambda::EventSourceMapping',
  'AWS::IAM::Role',
  'AWS::IAM::Policy',
  'AWS::IAM::ManagedPolicy',
  'AWS::SQS::Queue',
  'AWS::SQS::QueuePolicy',
  'AWS::DynamoDB::Table',
  'AWS::DynamoDB::GlobalTable',
  'AWS::StepFunctions::StateMachine',
  'AWS::Logs::LogGroup',
  'AWS::ApiGateway::RestApi',
  'AWS::ApiGateway::Resource',
  'AWS::ApiGateway::Method',
  'AWS::ApiGateway::Authorizer',
  'AWS::ApiGateway::RequestValidator',
  'AWS::ApiGateway::GatewayResponse',
  'AWS::ApiGateway::Stage',
  'AWS::ApiGateway::Deployment',
  'AWS::IoT::Authorizer',
  'AWS::IoT::TopicRule',
]);

export type RoleReport = {
  /** The function's or state machine's path in the app. */
  readonly name: string;
  readonly role: string;
  readonly invocations: number;
  readonly failures: number;
  readonly coldStarts: number;
  /** Allowed calls by action. */
  readonly calls: Readonly<Record<string, number>>;
  /** Grants of its role that no call used: one action on one resource each. */
  readonly unusedGrants: ReadonlyArray<{ readonly action: string; readonly resource: string }>;
};

export type RehearsalReport = {
  readonly stack: string;
  readonly region: string;
  readonly account: string;
  readonly passed: boolean;
  readonly problems: ReadonlyArray<{ readonly area: string; readonly message: string }>;
  readonly denials: readonly Denial[];
  readonly drive: readonly DriveStep[];
  readonly functions: readonly RoleReport[];
  readonly stateMachines: readonly RoleReport[];
  /** Resource types of the template the rehearsal neither runs nor checks, with how many of each. */
  readonly notRehearsed: Readonly<Record<string, number>>;
};

/** The report of a rehearsal, read from its ledger once the drive (if any) is over. */
export function reportOf(rehearsal: RunningRehearsal, drive: readonly DriveStep[]): RehearsalReport {
  const { ledger, iam, environment } = rehearsal;
  const arns = Object.keys(rehearsal.assembly.template.Resources).flatMap((logicalId) => {
    const arn = rehearsal.references.identity(logicalId)?.attributes.Arn;
    return arn ? [[arn, displayName(rehearsal.assembly.template, logicalId)] as const] : [];
  });
  // `Tables/Inventory/index/*` reads better than the ARN; a resource not of the stack keeps its ARN
  const label = (pattern: string) => {
    const found = arns.find(
      ([arn]) => pattern === arn || (pattern.startsWith(arn) && '/:'.includes(pattern.charAt(arn.length))),
    );
    return found ? `${found[1]}${pattern.slice(found[0].length)}` : pattern;
  };
  const roleReport = (name: string, role: string, logicalId?: string): RoleReport => {
    const count = logicalId ? ledger.invocations.get(logicalId) : undefined;
    return {
      name,
      role,
      invocations: count?.invocations ?? 0,
      failures: count?.failures ?? 0,
      coldStarts: count?.coldStarts ?? 0,
      calls: Object.fromEntries(ledger.calls.get(name) ?? []),
      unusedGrants: iam
        .grants(role)
        .filter((grant) => !grant.used)
        .map((grant) => ({ action: grant.action, resource: label(grant.resource) })),
    };
  };
  const notRehearsed: Record<string, number> = {};
  for (const resource of Object.values(rehearsal.assembly.template.Resources))
    if (!rehearsedTypes.has(resource.Type) && !isCustomResource(resource))
      notRehearsed[resource.Type] = (notRehearsed[resource.Type] ?? 0) + 1;
  return {
    stack: environment.stackName,
    region: environment.region,
    account: environment.account,
    passed: ledger.denials.length === 0 && ledger.problems.length === 0 && drive.every((step) => step.ok),
    problems: ledger.problems.map((problem) => ({ area: problem.area, message: problem.message })),
    denials: ledger.denials,
    drive,
    functions: rehearsal.functions.map((fn) => roleReport(fn.displayName, fn.roleLogicalId, fn.logicalId)),
    stateMachines: rehearsal.machines.map((machine) =>
      roleReport(machine.displayName, machine.roleLogicalId),
    ),
    notRehearsed,
  };
}

/** One line per denial, as printed the moment it happens and again at the end. */
export function denialLine(denial: Denial): string {
  return `denied: ${denial.principal} called ${denial.action} on ${denial.resource}: ${denial.reason}`;
}

const groupByResource = (grants: RoleReport['unusedGrants']) => {
  const byResource = new Map<string, string[]>();
  for (const grant of grants)
    byResource.set(grant.resource, [...(byResource.get(grant.resource) ?? []), grant.action]);
  return [...byResource].map(([resource, actions]) => `${resource}: ${actions.join(', ')}`);
};

/** The report for people: what ran, what was denied, what each role was granted and never used, and the verdict. */
export function renderReport(report: RehearsalReport): string {
  const lines = [`rehearsal of stack ${report.stack} (account ${report.account}, region ${report.region})`];
  if (report.drive.length > 0) {
    lines.push('', 'drive:');
    for (const step of report.drive)
      lines.push(
        `  ${step.ok ? 'ok  ' : 'FAIL'} ${step.name} (${(step.ms / 1000).toFixed(1)} s)${step.detail ? `\n       ${step.detail}` : ''}`,
      );
  }
  lines.push('', 'functions (invocations, cold starts, failures):');
  for (const fn of report.functions)
    lines.push(`  ${fn.name}: ${fn.invocations}, ${fn.coldStarts}, ${fn.failures}`);
  lines.push('', 'granted and never used by the calls made (per role, by resource):');
  for (const role of [...report.functions, ...report.stateMachines]) {
    const unused = groupByResource(role.unusedGrants);
    lines.push(`  ${role.name}: ${unused.length === 0 ? 'nothing' : ''}`);
    for (const entry of unused) lines.push(`    ${entry}`);
  }
  const skipped = Object.entries(report.notRehearsed).map(([type, count]) => `${type} ×${count}`);
  if (skipped.length > 0) lines.push('', `not rehearsed: ${skipped.join(', ')}`);
  lines.push('', report.problems.length === 0 ? 'problems: none' : `problems: ${report.problems.length}`);
  for (const problem of report.problems) lines.push(`  ${problem.area}: ${problem.message}`);
  lines.push(report.denials.length === 0 ? 'denied calls: none' : `denied calls: ${report.denials.length}`);
  const distinct = new Map<string, number>();
  for (const denial of report.denials)
    distinct.set(denialLine(denial), (distinct.get(denialLine(denial)) ?? 0) + 1);
  for (const [line, times] of distinct) lines.push(`  ${line}${times > 1 ? ` (${times} times)` : ''}`);
  lines.push(
    '',
    report.passed
      ? 'rehearsal passed: the stack ran whole with no call denied'
      : 'rehearsal FAILED: see the problems, denied calls and drive above',
  );
  return lines.join('\n');
}
