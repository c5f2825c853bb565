import { Duration } from 'aws-cdk-lib';
import type { RestApi } from 'aws-cdk-lib/aws-apigateway';
import {
  Dashboard,
  GraphWidget,
  type IMetric,
  MathExpression,
  Metric,
  TextWidget,
} from 'aws-cdk-lib/aws-cloudwatch';
import type { ITableV2 } from 'aws-cdk-lib/aws-dynamodb';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { IStateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { lostMessagesMetric, signalsNotPublishedMetric } from './alarms.ts';

export type MeshDashboardProps = {
  /** The dashboard's name in the console. */
  readonly dashboardName: string;
  readonly functions: ReadonlyMap<string, IFunction>;
  readonly pushFlow: IStateMachine;
  readonly rolloutFlow?: IStateMachine;
  readonly applyFlow?: IStateMachine;
  readonly controlQueue: IQueue;
  readonly deadLetterQueue: IQueue;
  readonly api: RestApi;
  readonly tables: ReadonlyMap<string, ITableV2>;
  /** The function hosts report through. @default 'host-report' */
  readonly reportFunction?: string;
};

const period = Duration.minutes(5);
const sum = { period, statistic: 'Sum' } as const;

/**
 * One CloudWatch dashboard of the fleet's flow, top to bottom as a change travels: pushes (the
 * push flow's executions), hosts' reports, holds and losses (the control queue's held and waiting
 * messages, the dead-letter queue, lost messages, signals not published), rollouts and apply jobs
 * (their flows' executions), throttles (every function's, the tables', the API's 4XX, which
 * holds the firewall's 429s) and errors (every function's, the API's 5XX).
 */
export class MeshDashboard extends Construct {
  public readonly dashboard: Dashboard;

  constructor(scope: Construct, id: string, props: MeshDashboardProps) {
    super(scope, id);
    const executions = (machine: IStateMachine, what: string) => [
      machine.metricStarted({ ...sum, label: `${what} started` }),
      machine.metricSucceeded({ ...sum, label: `${what} succeeded` }),
      machine.metricFailed({ ...sum, label: `${what} failed` }),
      machine.metricTimedOut({ ...sum, label: `${what} timed out` }),
    ];
    const allFunctions = (metric: 'Errors' | 'Throttles', label: string): IMetric =>
      new MathExpression({
        expression: `SUM([${[...props.functions.keys()].map((_, i) => `FILL(f${i}, 0)`).join(', ')}])`,
        usingMetrics: Object.fromEntries(
          [...props.functions.values()].map((fn, i) => [`f${i}`, fn.metric(metric, sum)]),
        ),
        period,
        label,
      });
    const report = props.functions.get(props.reportFunction ?? 'host-report');
    const graph = (title: string, left: IMetric[], width = 12) =>
      new GraphWidget({ title, left, width, height: 6 });

    this.dashboard = new Dashboard(this, 'Dashboard', {
      dashboardName: props.dashboardName,
      defaultInterval: Duration.hours(6),
    });
    this.dashboard.addWidgets(
      new TextWidget({
        markdown:
          '# mesh\nA change travels top to bottom: pushed, reported, held or lost, stepped by rollouts and apply jobs; then what was throttled and what failed. The alarms are in docs/deploy.md.',
        width: 24,
        height: 2,
      }),
    );
    this.dashboard.addWidgets(
      graph('Pushes (push flow executions)', executions(props.pushFlow, 'pushes')),
      graph(
        "Hosts' reports",
        report
          ? [
              report.metricInvocations({ ...sum, label: 'reports' }),
              report.metricErrors({ ...sum, label: 'refused or failed' }),
            ]
          : [],
      ),
    );
    this.dashboard.addWidgets(
      graph('Holds and losses', [
        props.controlQueue.metricApproximateNumberOfMessagesNotVisible({
          period,
          statistic: 'Maximum',
          label: 'control messages in flight or held',
        }),
        props.controlQueue.metricApproximateNumberOfMessagesVisible({
          period,
          statistic: 'Maximum',
          label: 'control messages waiting',
        }),
        props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
          period,
          statistic: 'Maximum',
          label: 'dead letters',
        }),
        new Metric({ ...lostMessagesMetric, ...sum, label: 'lost messages' }),
        new Metric({ ...signalsNotPublishedMetric, ...sum, label: 'signals not published' }),
      ]),
      graph('Rollouts and apply jobs (flow executions)', [
        ...(props.rolloutFlow ? executions(props.rolloutFlow, 'rollouts') : []),
        ...(props.applyFlow ? executions(props.applyFlow, 'apply jobs') : []),
      ]),
    );
    this.dashboard.addWidgets(
      graph('Throttles', [
        allFunctions('Throttles', 'functions throttled'),
        ...[...props.tables].flatMap(([name, table]) => [
          table.metric('ReadThrottleEvents', { ...sum, label: `${name} reads throttled` }),
          table.metric('WriteThrottleEvents', { ...sum, label: `${name} writes throttled` }),
        ]),
        props.api.metricClientError({
          ...sum,
          label: 'API 4XX (429s of the firewall and budgets among them)',
        }),
      ]),
      graph('Errors', [
        allFunctions('Errors', 'function errors'),
        props.api.metricServerError({ ...sum, label: 'API 5XX' }),
      ]),
    );
  }
}
