import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { RemovalPolicy } from 'aws-cdk-lib';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { DefinitionBody, LogLevel, StateMachine, StateMachineType } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { pushDefinitionPath } from '../server/flows/push-definition.ts';
import type { FunctionSpec } from '../server/functions/table.ts';
import { acknowledge } from './nag.ts';
import { functionArnPlaceholder, throwIfProblems } from './names.ts';

/** The push flow's one definition: the local runtime runs it, the CDK deploys it. */
export const pushFlowAslPath = fileURLToPath(pushDefinitionPath);

/** Every `${Name}` placeholder in an ASL text, in order of first appearance. */
export function aslPlaceholders(text: string): string[] {
  return [...new Set([...text.matchAll(/\$\{(\w+)\}/g)].map((match) => match[1] as string))];
}

/** Which function fills which placeholder, and what does not fit, checked before anything is built. */
function planSubstitutions(
  text: string,
  specs: readonly FunctionSpec[],
): { readonly functionFor: ReadonlyMap<string, FunctionSpec>; readonly problems: string[] } {
  const byPlaceholder = new Map(specs.map((spec) => [functionArnPlaceholder(spec.name), spec]));
  const functionFor = new Map<string, FunctionSpec>();
  const problems: string[] = [];
  for (const placeholder of aslPlaceholders(text)) {
    const spec = byPlaceholder.get(placeholder);
    if (!spec) problems.push(`\${${placeholder}} names no function of the manifest`);
    else if (spec.trigger !== 'flow')
      problems.push(`\${${placeholder}} names ${spec.name}, whose trigger is '${spec.trigger}', not 'flow'`);
    else functionFor.set(placeholder, spec);
  }
  const used = new Set([...functionFor.values()].map((spec) => spec.name));
  for (const spec of specs) {
    if (spec.trigger === 'flow' && !used.has(spec.name))
      problems.push(
        `flow function ${spec.name} is not used by the push flow (no \${${functionArnPlaceholder(spec.name)}})`,
      );
  }
  return { functionFor, problems };
}

export type PushFlowProps = {
  /** @default lib/server/flows/push.asl.json */
  readonly aslPath?: string;
  /** The manifest; the flow's `${<Pascal>FunctionArn}` placeholders name its 'flow' functions. */
  readonly specs: readonly FunctionSpec[];
  /** The built function for a manifest name. */
  readonly functionNamed: (name: string) => IFunction;
  /** @default RetentionDays.ONE_MONTH */
  readonly logRetention?: RetentionDays;
};

/**
 * The push flow as a Step Functions Express state machine, from the same ASL file the local
 * runtime executes; only the function ARNs are filled in, by definition substitutions.
 * Policy fixed here: every event logged with its data, tracing on, invoke rights only on the
 * functions the definition names.
 */
export class PushStateMachine extends Construct {
  public readonly stateMachine: StateMachine;
  public readonly logGroup: LogGroup;
  /** Placeholder → function name, as substituted. */
  public readonly substitutions: ReadonlyMap<string, string>;

  constructor(scope: Construct, id: string, props: PushFlowProps) {
    super(scope, id);
    const aslPath = props.aslPath ?? pushFlowAslPath;
    const problems: string[] = [];
    let text = '';
    if (!existsSync(aslPath)) problems.push(`the push flow definition ${aslPath} does not exist`);
    else {
      text = readFileSync(aslPath, 'utf8');
      try {
        JSON.parse(text);
      } catch (error) {
        problems.push(`the push flow definition ${aslPath} is not JSON (${(error as Error).message})`);
      }
    }
    const plan = planSubstitutions(text, props.specs);
    throwIfProblems('PushStateMachine', [...problems, ...plan.problems]);

    this.logGroup = new LogGroup(this, 'Logs', {
      retention: props.logRetention ?? RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const substitutions: Record<string, string> = {};
    const invoked: IFunction[] = [];
    for (const [placeholder, spec] of plan.functionFor) {
      const fn = props.functionNamed(spec.name);
      substitutions[placeholder] = fn.functionArn;
      invoked.push(fn);
    }
    this.stateMachine = new StateMachine(this, 'StateMachine', {
      stateMachineType: StateMachineType.EXPRESS,
      definitionBody: DefinitionBody.fromFile(aslPath),
      definitionSubstitutions: substitutions,
      logs: { destination: this.logGroup, level: LogLevel.ALL, includeExecutionData: true },
      tracingEnabled: true,
    });
    // the definition invokes each function by its unqualified ARN: no version or alias (:*)
    this.stateMachine.addToRolePolicy(
      new PolicyStatement({
        actions: ['lambda:InvokeFunction'],
        resources: invoked.map((fn) => fn.functionArn),
      }),
    );
    this.substitutions = new Map(
      [...plan.functionFor].map(([placeholder, spec]) => [placeholder, spec.name]),
    );

    acknowledge(this.stateMachine, {
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'CloudWatch Logs delivery (logs:*LogDelivery*, DescribeLogGroups) and X-Ray support no resource-level permissions',
    });
  }
}
