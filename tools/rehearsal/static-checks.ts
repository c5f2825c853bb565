import type { FunctionDefinition } from './function-definitions.ts';
import type { IamCheck } from './iam-check.ts';
import type { TemplatePolicies } from './iam-policies.ts';
import type { TopicRuleModel } from './iot-model.ts';
import type { RehearsalLedger } from './ledger.ts';
import { RehearsalProblem } from './problems.ts';
import type { References } from './references.ts';
import { type MachineDefinition, machinePrincipal, machineServiceActions } from './step-functions.ts';

/**
 * What the services check with a role when the stack is created, before any request: that
 * Lambda and Step Functions may assume their roles, that a state machine's role may deliver its
 * logs and traces, that IoT may assume a topic rule's error action role, that every identity
 * policy can be read and every condition key judged.
 */
export async function checkRolesAtCreation(deps: {
  readonly references: References;
  readonly policies: TemplatePolicies;
  readonly iam: IamCheck;
  readonly ledger: RehearsalLedger;
  readonly functions: readonly FunctionDefinition[];
  readonly machines: readonly MachineDefinition[];
  readonly iotRules: readonly TopicRuleModel[];
}): Promise<void> {
  const { references, policies, iam, ledger } = deps;
  for (const finding of iam.unsupportedConditionKeys()) ledger.problem(new RehearsalProblem('iam', finding));
  const roleArn = (logicalId: string) => references.identity(logicalId)?.attributes.Arn as string;
  const assumable = async (service: string, sourceArn: string, roleLogicalId: string, what: string) => {
    const decision = await iam.authorize(
      { kind: 'service', service, sourceArn, label: service },
      { action: 'sts:AssumeRole', resource: roleArn(roleLogicalId) },
    );
    if (!decision.allowed)
      ledger.problem(
        new RehearsalProblem(
          'iam',
          `${service} may not assume the role of ${what} (${roleLogicalId}): the deploy would fail`,
        ),
      );
  };
  for (const fn of deps.functions) {
    try {
      policies.identityPolicies(fn.roleLogicalId);
    } catch (error) {
      if (error instanceof RehearsalProblem) ledger.problem(error);
      else throw error;
    }
    await assumable('lambda.amazonaws.com', fn.arn, fn.roleLogicalId, `function ${fn.displayName}`);
  }
  for (const machine of deps.machines) {
    await assumable(
      'states.amazonaws.com',
      machine.arn,
      machine.roleLogicalId,
      `state machine ${machine.displayName}`,
    );
    const principal = machinePrincipal(machine);
    const actions = [
      ...(machine.logging ? machineServiceActions.logging : []),
      ...(machine.tracing ? machineServiceActions.tracing : []),
    ];
    for (const action of actions) await iam.authorize(principal, { action, resource: '*' });
  }
  for (const rule of deps.iotRules)
    if (rule.errorLog)
      await assumable(
        'iot.amazonaws.com',
        rule.arn,
        rule.errorLog.roleLogicalId,
        `IoT rule ${rule.displayName}'s error action`,
      );
}
