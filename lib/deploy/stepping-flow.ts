import { readFileSync } from 'node:fs';
import { RemovalPolicy } from 'aws-cdk-lib';
import { Policy, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { DefinitionBody, LogLevel, StateMachine, StateMachineType } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import type { SteppingFlow } from '../server/flows/stepping-flows.ts';
import type { FunctionSpec } from '../server/functions/table.ts';
import { acknowledge } from './nag.ts';
import { functionArnPlaceholder, throwIfProblems } from './names.ts';
import { aslPlaceholders } from './push-flow.ts';

export type SteppingFlowProps = {
  /** Which flow (lib/server/flows/stepping-flows.ts): its ASL file and the trigger of its one function. */
  readonly flow: SteppingFlow;
  /** The manifest; the definition's one placeholder names its function of the flow's trigger. */
  readonly specs: readonly FunctionSpec[];
  readonly functionNamed: (name: string) => IFunction;
  /** @default RetentionDays.ONE_MONTH */
  readonly logRetention?: RetentionDays;
};

/**
 * A stepping flow (the rollout's, the apply job's) as a Step Functions Standard state machine: a
 * rollout waits for its hosts, and an apply's parts run, far longer than Express's five minutes,
 * and a Standard execution runs for up to a year. One execution per job started (the job's id
 * in its name, and each continuation after its run's name). Policy fixed here: events logged
 * (without their data: a record can be long), tracing on, invoke rights only on the one function
 * the definition names, and the right to start an execution of itself only.
 */
export class SteppingStateMachine extends Construct {
  public readonly stateMachine: StateMachine;
  public readonly logGroup: LogGroup;

  constructor(scope: Construct, id: string, props: SteppingFlowProps) {
    super(scope, id);
    const { aslPath, trigger } = props.flow;
    const text = readFileSync(aslPath, 'utf8');
    const byPlaceholder = new Map(props.specs.map((spec) => [functionArnPlaceholder(spec.name), spec]));
    const problems: string[] = [];
    const invoked: IFunction[] = [];
    const substitutions: Record<string, string> = {};
    for (const placeholder of aslPlaceholders(text)) {
      const spec = byPlaceholder.get(placeholder);
      if (spec?.trigger !== trigger) {
        problems.push(`\${${placeholder}} names no '${trigger}' function of the manifest`);
        continue;
      }
      const fn = props.functionNamed(spec.name);
      substitutions[placeholder] = fn.functionArn;
      invoked.push(fn);
    }
    throwIfProblems('SteppingStateMachine', problems);

    this.logGroup = new LogGroup(this, 'Logs', {
      retention: props.logRetention ?? RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.stateMachine = new StateMachine(this, 'StateMachine', {
      stateMachineType: StateMachineType.STANDARD,
      definitionBody: DefinitionBody.fromFile(aslPath),
      definitionSubstitutions: substitutions,
      logs: { destination: this.logGroup, level: LogLevel.ALL, includeExecutionData: false },
      tracingEnabled: true,
    });
    // the definition invokes the function by its unqualified ARN: no version or alias (:*)
    this.stateMachine.addToRolePolicy(
      new PolicyStatement({
        actions: ['lambda:InvokeFunction'],
        resources: invoked.map((fn) => fn.functionArn),
      }),
    );
    // The flow continues as a new execution of itself (ContinueAsNew) before its history fills.
    // A policy of its own, not the role's default one: the state machine waits for that one, and
    // naming the machine in it would make each wait for the other.
    new Policy(this, 'ContinueAsNew', {
      roles: [this.stateMachine.role],
      statements: [
        new PolicyStatement({
          actions: ['states:StartExecution'],
          resources: [this.stateMachine.stateMachineArn],
        }),
      ],
    });
    acknowledge(this.stateMachine, {
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'CloudWatch Logs delivery (logs:*LogDelivery*, DescribeLogGroups) and X-Ray support no resource-level permissions',
    });
  }
}
