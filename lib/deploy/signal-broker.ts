import { RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { CfnAuthorizer, CfnTopicRule } from 'aws-cdk-lib/aws-iot';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { AwsCustomResource, AwsCustomResourcePolicy, PhysicalResourceId } from 'aws-cdk-lib/custom-resources';
import { Construct } from 'constructs';
import type { FunctionSpec } from '../server/functions/table.ts';
import { acknowledge, arnInFinding } from './nag.ts';
import { throwIfProblems } from './names.ts';

export type SignalBrokerProps = {
  /** The manifest: its 'broker-authorizer' and 'broker-lifecycle' functions. */
  readonly specs: readonly FunctionSpec[];
  /** The built function for a manifest name. */
  readonly functionNamed: (name: string) => IFunction;
  /**
   * The custom authorizer's name, which hosts put in their MQTT username.
   * @default `<stack name>-signal`
   */
  readonly authorizerName?: string;
  /** @default RetentionDays.ONE_MONTH */
  readonly logRetention?: RetentionDays;
};

/**
 * AWS IoT Core as the change signal's broker. Policy fixed here: an unsigned custom authorizer
 * (hosts send their node name as username and a proof of possession as password, which a
 * token signature cannot express), active, whose function may be invoked by IoT for this
 * authorizer only, with no reserved concurrency (anyone who knows the name can call an unsigned
 * authorizer, and a ceiling would let them hold real hosts under it; docs/deploy.md); the
 * lifecycle topic rule feeding the presence function, its failures logged; and the account's ATS data endpoint, looked up once at deploy, where
 * hosts connect (port 443, ALPN `mqtt`) and the push publishes.
 */
export class SignalBroker extends Construct {
  public readonly authorizer: CfnAuthorizer;
  public readonly authorizerName: string;
  public readonly lifecycleRule: CfnTopicRule;
  /** The account's IoT data endpoint (`<prefix>-ats.iot.<region>.amazonaws.com`), resolved at deploy. */
  public readonly dataEndpoint: string;
  public readonly brokerUrl: string;

  constructor(scope: Construct, id: string, props: SignalBrokerProps) {
    super(scope, id);
    const authorizerSpec = props.specs.filter((spec) => spec.trigger === 'broker-authorizer');
    const lifecycleSpec = props.specs.filter((spec) => spec.trigger === 'broker-lifecycle');
    throwIfProblems('SignalBroker', [
      ...(authorizerSpec.length === 1
        ? []
        : [`needs one 'broker-authorizer' function, found ${authorizerSpec.length}`]),
      ...(lifecycleSpec.length === 1
        ? []
        : [`needs one 'broker-lifecycle' function, found ${lifecycleSpec.length}`]),
    ]);
    const stack = Stack.of(this);

    const endpoint = new AwsCustomResource(this, 'DataEndpoint', {
      onUpdate: {
        service: 'Iot',
        action: 'describeEndpoint',
        parameters: { endpointType: 'iot:Data-ATS' },
        physicalResourceId: PhysicalResourceId.of('iot-data-ats-endpoint'),
      },
      policy: AwsCustomResourcePolicy.fromSdkCalls({ resources: AwsCustomResourcePolicy.ANY_RESOURCE }),
      installLatestAwsSdk: false,
    });
    this.dataEndpoint = endpoint.getResponseField('endpointAddress');
    this.brokerUrl = `mqtts://${this.dataEndpoint}:443`;

    const authorizerFunction = props.functionNamed((authorizerSpec[0] as FunctionSpec).name);
    this.authorizerName = props.authorizerName ?? `${stack.stackName}-signal`;
    this.authorizer = new CfnAuthorizer(this, 'Authorizer', {
      authorizerName: this.authorizerName,
      authorizerFunctionArn: authorizerFunction.functionArn,
      signingDisabled: true,
      status: 'ACTIVE',
      enableCachingForHttp: false,
    });
    authorizerFunction.addPermission('InvokedByIotAuthorizer', {
      principal: new ServicePrincipal('iot.amazonaws.com'),
      sourceArn: this.authorizer.attrArn,
      sourceAccount: stack.account,
    });

    const presenceFunction = props.functionNamed((lifecycleSpec[0] as FunctionSpec).name);
    const errors = new LogGroup(this, 'LifecycleRuleErrors', {
      retention: props.logRetention ?? RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const errorRole = new Role(this, 'LifecycleRuleErrorRole', {
      assumedBy: new ServicePrincipal('iot.amazonaws.com'),
      description: 'mesh signal: IoT writes lifecycle rule failures to its log group',
    });
    errors.grantWrite(errorRole);
    this.lifecycleRule = new CfnTopicRule(this, 'LifecycleRule', {
      topicRulePayload: {
        description: 'mesh: host connects and disconnects, for presence',
        sql: "SELECT * FROM '$aws/events/presence/+/+'",
        awsIotSqlVersion: '2016-03-23',
        ruleDisabled: false,
        actions: [{ lambda: { functionArn: presenceFunction.functionArn } }],
        errorAction: { cloudwatchLogs: { logGroupName: errors.logGroupName, roleArn: errorRole.roleArn } },
      },
    });
    presenceFunction.addPermission('InvokedByLifecycleRule', {
      principal: new ServicePrincipal('iot.amazonaws.com'),
      sourceArn: this.lifecycleRule.attrArn,
      sourceAccount: stack.account,
    });

    // the singleton function AwsCustomResource runs, shared by the stack's custom resources
    const singleton = stack.node.tryFindChild(
      `AWS${AwsCustomResource.PROVIDER_FUNCTION_UUID.replaceAll('-', '')}`,
    );
    if (singleton)
      acknowledge(singleton, {
        id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
        reason: "the AwsCustomResource provider's own logging role, as CDK makes it; it runs once per deploy",
      });
    acknowledge(endpoint, {
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'iot:DescribeEndpoint has no resource-level permissions; it only reads the account data endpoint',
    });
    acknowledge(errorRole, {
      id: `AwsSolutions-IAM5[Resource::${arnInFinding(errors)}:*]`,
      reason: 'CreateLogStream/PutLogEvents on the streams of the rule error log group only (<group>:*)',
    });
  }
}
