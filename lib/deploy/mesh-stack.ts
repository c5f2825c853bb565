import { CfnOutput, Duration, NestedStack, Stack, type StackProps } from 'aws-cdk-lib';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { Construct } from 'constructs';
import { rolePolicyNames } from '../server/core/roles.ts';
import { steppingFlows } from '../server/flows/stepping-flows.ts';
import { type FunctionSpec, functionSpecs, routesOf } from '../server/functions/table.ts';
import { consumerTimeoutSeconds } from '../server/setup/resources.ts';
import { MeshAlarms } from './alarms.ts';
import { ControlPlaneApi } from './api.ts';
import type { RouteBudgets } from './api-budgets.ts';
import { ApiFirewall, type ApiFirewallLimits } from './api-firewall.ts';
import { ControlConsumer } from './control-consumer.ts';
import { ControlQueue } from './control-queue.ts';
import { MeshDashboard } from './dashboard.ts';
import { MeshEventBus } from './event-bus.ts';
import { MeshFunctions, timeoutOf } from './functions.ts';
import { GithubOidc } from './github-oidc.ts';
import { acknowledge } from './nag.ts';
import { throwIfProblems } from './names.ts';
import { OperatorRoles } from './operator-roles.ts';
import { PushStateMachine, pushFlowAslPath } from './push-flow.ts';
import { ReleaseBucket } from './release-bucket.ts';
import { SignalBroker } from './signal-broker.ts';
import { SteppingStateMachine } from './stepping-flow.ts';
import { SummaryAggregator } from './summary-aggregator.ts';
import { MeshTables } from './tables.ts';

export type MeshStackProps = StackProps & {
  /**
   * Keep the tables when the stack is deleted.
   * @default true
   */
  readonly retainData?: boolean;
  /** @default functionSpecs from lib/server/functions/table.ts */
  readonly specs?: readonly FunctionSpec[];
  /** @default functions/ at the project root */
  readonly functionsDir?: string;
  /** @default lib/server/flows/push.asl.json */
  readonly pushFlowAslPath?: string;
  /** @default 5 */
  readonly consumerMaxConcurrency?: number;
  /** Each kind of caller's budget on its API methods (lib/deploy/api-budgets.ts). @default defaultRouteBudgets */
  readonly budgets?: Partial<RouteBudgets>;
  /**
   * The web ACL limiting requests per address (ApiFirewall), with its limits; `false` leaves it
   * out (a trial stack, LocalStack), and then one client can keep `POST /enrol` throttled for all.
   * @default true: 500 enrolments and 10,000 requests per address in 5 minutes
   */
  readonly firewall?: boolean | ApiFirewallLimits;
  /**
   * The GitHub repository (`owner/name`, `-c githubRepo=owner/name`) whose workflows may assume
   * two roles through GitHub's OIDC: MeshViewer from pull requests, MeshOperator from the main
   * branch (lib/deploy/github-oidc.ts, docs/gitops.md). Without it there is no provider and no role.
   */
  readonly github?: {
    readonly repo: string;
    /** The branch whose runs apply (`-c githubBranch=NAME`). @default 'main' */
    readonly branch?: string;
    /** The branch's role holds MeshAdmin, so the workflow may apply with --prune (`-c githubPrune=true`). @default false */
    readonly prune?: boolean;
    /** The account's GitHub OIDC provider, kept when it has one (`-c githubOidcProvider=ARN`). */
    readonly existingProviderArn?: string;
  };
  /**
   * An address the alarm topic mails (`-c alarmEmail=ADDRESS`); it must confirm the subscription
   * AWS mails it first. Without one, subscribe to the `AlarmTopicArn` output yourself.
   */
  readonly alarmEmail?: string;
  /**
   * An address mailed the events a person has to act on (`-c eventsEmail=ADDRESS`; lib/deploy/event-bus.ts,
   * docs/events.md); it must confirm the subscription first.
   */
  readonly eventsEmail?: string;
  /**
   * The release keys (Ed25519, base64 SPKI; `-c releaseKeys=KEY,KEY`) a release of `mesh-host`
   * must be signed by to be published (docs/host-agent.md, "Releases"). @default none: no release is taken
   */
  readonly releaseKeys?: readonly string[];
};

/** An address SNS can mail: something@domain, no spaces. */
const emailAddress = /^[^@\s]+@[^@\s]+\.[^@\s]+$/;

/**
 * The whole control plane, driven by the shared manifests: one function and role per row of
 * lib/server/functions/table.ts, one method per row's route, the push flow from its ASL.
 */
export class MeshStack extends Stack {
  public readonly tables: MeshTables;
  public readonly control: ControlQueue;
  public readonly releases: ReleaseBucket;
  public readonly functions: MeshFunctions;
  public readonly pushFlow: PushStateMachine;
  /** The rollout flow, when the manifest has its 'rollout-flow' function. */
  public readonly rolloutFlow: SteppingStateMachine | undefined;
  /** The apply flow, when the manifest has its 'apply-flow' function. */
  public readonly applyFlow: SteppingStateMachine | undefined;
  public readonly api: ControlPlaneApi;
  public readonly firewall: ApiFirewall | undefined;
  /** GitHub's OIDC provider and the Action's role, when `github` is given. */
  public readonly github: GithubOidc | undefined;
  public readonly alarms: MeshAlarms;
  /** Where every alarm goes, on alarm and back to OK. */
  public readonly alarmTopic: Topic;
  public readonly dashboard: MeshDashboard;
  public readonly signal: SignalBroker | undefined;
  public readonly roles: OperatorRoles;
  public readonly summaryAggregator: SummaryAggregator | undefined;
  /** The stack's own EventBridge bus (docs/events.md). */
  public readonly events: MeshEventBus;

  /** The nested stacks, each under CloudFormation's 500 resources with room to grow (docs/deploy.md). */
  public readonly compute: NestedStack;
  public readonly edge: NestedStack;
  public readonly monitoring: NestedStack;

  constructor(scope: Construct, id: string, props: MeshStackProps = {}) {
    super(scope, id, props);
    throwIfProblems('MeshStack', [
      ...(props.alarmEmail !== undefined && !emailAddress.test(props.alarmEmail)
        ? [`alarmEmail ${JSON.stringify(props.alarmEmail)} is not an email address`]
        : []),
      ...(props.eventsEmail !== undefined && !emailAddress.test(props.eventsEmail)
        ? [`eventsEmail ${JSON.stringify(props.eventsEmail)} is not an email address`]
        : []),
    ]);
    const specs = props.specs ?? functionSpecs;
    const consumerSpec = specs.find((spec) => spec.trigger === 'queue');

    // The data stays in this stack: moving a resource between stacks replaces it, and the
    // tables and queues are what must never be replaced. What grows with the function table
    // lives in nested stacks, split by what each row adds: a function, its role, policy and log
    // group (compute); a route's method, resource and permission (edge); an alarm (monitoring).
    this.tables = new MeshTables(this, 'Tables', { retain: props.retainData ?? true });
    this.control = new ControlQueue(this, 'ControlQueue', {
      consumerTimeout: Duration.seconds(consumerSpec ? timeoutOf(consumerSpec) : consumerTimeoutSeconds),
    });
    this.releases = new ReleaseBucket(this, 'Releases', { retain: props.retainData ?? true });
    this.compute = new NestedStack(this, 'Compute', {
      description: 'mesh: the functions, their flows, the queue and stream consumers, the signal broker',
    });
    this.edge = new NestedStack(this, 'Edge', {
      description: "mesh: the API, its firewall and the operators' roles",
    });
    this.monitoring = new NestedStack(this, 'Monitoring', {
      description: 'mesh: the alarms and the dashboard',
    });

    this.functions = new MeshFunctions(this.compute, 'Functions', {
      specs,
      inventoryTable: this.tables.inventory,
      identityTable: this.tables.identity,
      controlQueue: this.control.queue,
      deadLetterQueue: this.control.deadLetterQueue,
      releaseBucket: this.releases.bucket,
      ...(props.releaseKeys ? { releaseKeys: props.releaseKeys } : {}),
      ...(props.functionsDir ? { functionsDir: props.functionsDir } : {}),
    });
    const functionNamed = (name: string) => this.functions.get(name);
    // beside the functions that put on it: their grants and environment name it within one stack
    this.events = new MeshEventBus(this.compute, 'Events', {
      ...(props.eventsEmail ? { email: props.eventsEmail } : {}),
    });
    this.functions.connectEvents(this.events.bus);

    if (consumerSpec) {
      new ControlConsumer(this.compute, 'ControlConsumer', {
        queue: this.control.queue,
        consumer: functionNamed(consumerSpec.name),
        ...(props.consumerMaxConcurrency ? { maxConcurrency: props.consumerMaxConcurrency } : {}),
      });
    }

    const aggregatorSpec = specs.find((spec) => spec.trigger === 'stream');
    this.summaryAggregator = aggregatorSpec
      ? new SummaryAggregator(this.compute, 'SummaryAggregator', {
          table: this.tables.inventory,
          aggregator: functionNamed(aggregatorSpec.name),
        })
      : undefined;

    this.pushFlow = new PushStateMachine(this.compute, 'PushFlow', {
      aslPath: props.pushFlowAslPath ?? pushFlowAslPath,
      specs,
      functionNamed,
    });
    this.functions.connectPushFlow(this.pushFlow.stateMachine);
    this.functions.connectPushRunner();
    const stepping = (flow: (typeof steppingFlows)[keyof typeof steppingFlows]) =>
      specs.some((spec) => spec.trigger === flow.trigger)
        ? new SteppingStateMachine(this.compute, flow.id, { flow, specs, functionNamed })
        : undefined;
    this.rolloutFlow = stepping(steppingFlows.rollout);
    if (this.rolloutFlow) this.functions.connectRolloutFlow(this.rolloutFlow.stateMachine);
    this.applyFlow = stepping(steppingFlows.apply);
    if (this.applyFlow) this.functions.connectApplyFlow(this.applyFlow.stateMachine);

    this.api = new ControlPlaneApi(this.edge, 'Api', {
      specs,
      functionNamed,
      ...(props.budgets ? { budgets: props.budgets } : {}),
    });
    this.roles = new OperatorRoles(this.edge, 'Roles', {
      api: this.api.api,
      stageName: this.api.stageName,
      routes: routesOf(specs),
    });
    this.github = props.github
      ? new GithubOidc(this.edge, 'GitHub', {
          repo: props.github.repo,
          ...(props.github.branch ? { branch: props.github.branch } : {}),
          viewerPolicy: this.roles.policies.viewer,
          operatorPolicy: this.roles.policies[props.github.prune ? 'admin' : 'operator'],
          ...(props.github.existingProviderArn
            ? { existingProviderArn: props.github.existingProviderArn }
            : {}),
        })
      : undefined;
    const firewall = props.firewall ?? true;
    const stage = this.api.api.deploymentStage;
    this.firewall = firewall
      ? new ApiFirewall(this.edge, 'Firewall', { stage, ...(firewall === true ? {} : firewall) })
      : undefined;
    if (!this.firewall) {
      acknowledge(stage, {
        id: 'AwsSolutions-APIG3',
        reason:
          'the firewall was turned off for this stack (firewall: false, -c waf=false): every route is still authenticated and each kind of caller has its own budget, but nothing limits one address',
      });
    }

    this.signal = specs.some((spec) => spec.trigger === 'broker-authorizer')
      ? new SignalBroker(this.compute, 'Signal', {
          specs,
          functionNamed,
          // the root stack's name: the nested stack's own is CloudFormation's long generated one
          authorizerName: `${this.stackName}-signal`,
        })
      : undefined;
    if (this.signal) {
      this.functions.connectSignal({
        brokerUrl: this.signal.brokerUrl,
        authorizerName: this.signal.authorizerName,
        iotDataEndpoint: this.signal.dataEndpoint,
        accountId: this.account,
        partition: this.partition,
      });
    }

    this.alarmTopic = new Topic(this, 'AlarmTopic', {
      displayName: `mesh alarms (${this.stackName})`,
      enforceSSL: true,
    });
    if (props.alarmEmail) this.alarmTopic.addSubscription(new EmailSubscription(props.alarmEmail));
    acknowledge(this.alarmTopic, {
      id: 'AwsSolutions-SNS2',
      reason:
        "CloudWatch alarms publish to a topic encrypted with AWS's own SNS key only if the key lets them, which that key's fixed policy does not; what the topic carries is an alarm's name and state, never fleet data",
    });
    const flows = new Map([
      ['push-flow', this.pushFlow.stateMachine],
      ...(this.rolloutFlow ? ([['rollout-flow', this.rolloutFlow.stateMachine]] as const) : []),
      ...(this.applyFlow ? ([['apply-flow', this.applyFlow.stateMachine]] as const) : []),
    ]);
    const stepOf = (trigger: FunctionSpec['trigger']) => {
      const spec = specs.find((candidate) => candidate.trigger === trigger);
      return spec ? ([[trigger, functionNamed(spec.name)]] as const) : [];
    };
    const tables = new Map([
      ['inventory', this.tables.inventory],
      ['identity', this.tables.identity],
    ]);
    this.alarms = new MeshAlarms(this.monitoring, 'Alarms', {
      deadLetterQueue: this.control.deadLetterQueue,
      functions: this.functions.functions,
      stateMachines: flows,
      steps: new Map([...stepOf('rollout-flow'), ...stepOf('apply-flow')]),
      api: this.api.api,
      tables,
      alarmAction: new SnsAction(this.alarmTopic),
    });
    if (this.summaryAggregator) this.alarms.notify(this.summaryAggregator.falling);
    this.dashboard = new MeshDashboard(this.monitoring, 'Dashboard', {
      dashboardName: this.stackName,
      functions: this.functions.functions,
      pushFlow: this.pushFlow.stateMachine,
      ...(this.rolloutFlow ? { rolloutFlow: this.rolloutFlow.stateMachine } : {}),
      ...(this.applyFlow ? { applyFlow: this.applyFlow.stateMachine } : {}),
      controlQueue: this.control.queue,
      deadLetterQueue: this.control.deadLetterQueue,
      api: this.api.api,
      tables,
    });

    new CfnOutput(this, 'ApiUrl', {
      value: this.api.api.url,
      description: 'the control plane: mesh --api <this URL> (requests are signed with SigV4)',
    });
    for (const [role, policy] of Object.entries(this.roles.policies)) {
      new CfnOutput(this, `${rolePolicyNames[role as keyof typeof rolePolicyNames]}PolicyArn`, {
        value: policy.managedPolicyArn,
        description: `attach to an operator's principal to grant the ${role} role (docs/deploy.md)`,
      });
    }
    if (this.github) {
      new CfnOutput(this, 'GitHubViewerRoleArn', {
        value: this.github.viewerRole.roleArn,
        description:
          "the GitHub Action's role-to-assume on pull requests: the plan (aws-actions/configure-aws-credentials; docs/gitops.md)",
      });
      new CfnOutput(this, 'GitHubOperatorRoleArn', {
        value: this.github.operatorRole.roleArn,
        description:
          "the GitHub Action's role-to-assume on the main branch: the apply (aws-actions/configure-aws-credentials; docs/gitops.md)",
      });
    }
    new CfnOutput(this, 'ReleaseBucketName', { value: this.releases.bucket.bucketName });
    new CfnOutput(this, 'InventoryTableName', { value: this.tables.inventory.tableName });
    new CfnOutput(this, 'IdentityTableName', { value: this.tables.identity.tableName });
    new CfnOutput(this, 'ControlQueueUrl', { value: this.control.queue.queueUrl });
    new CfnOutput(this, 'DeadLetterQueueUrl', { value: this.control.deadLetterQueue.queueUrl });
    new CfnOutput(this, 'AlarmTopicArn', {
      value: this.alarmTopic.topicArn,
      description:
        'every alarm notifies this topic: subscribe an address, a chat hook or a pager (docs/deploy.md)',
    });
    new CfnOutput(this, 'EventBusName', {
      value: this.events.bus.eventBusName,
      description: "where Mesh's events are put (source mesh): add a rule to send them on (docs/events.md)",
    });
    new CfnOutput(this, 'PushFlowArn', { value: this.pushFlow.stateMachine.stateMachineArn });
    if (this.signal) {
      new CfnOutput(this, 'SignalBrokerUrl', {
        value: this.signal.brokerUrl,
        description:
          'where hosts wait for their signal (MQTT over TLS, ALPN mqtt); the control plane tells them',
      });
      new CfnOutput(this, 'SignalAuthorizerName', { value: this.signal.authorizerName });
    }
  }
}
