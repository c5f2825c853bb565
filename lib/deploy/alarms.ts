import { Duration } from 'aws-cdk-lib';
import {
  Alarm,
  ComparisonOperator,
  type IAlarmAction,
  type IMetric,
  MathExpression,
  Metric,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { IStateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { metricsNamespace, powertoolsServiceName } from './functions.ts';
import { pascalCase } from './names.ts';

/**
 * The metric the control consumer emits when it lets a held message go. Powertools adds the
 * `service` dimension to every metric, so the alarm must name it to match.
 */
export const lostMessagesMetric = {
  namespace: metricsNamespace,
  metricName: 'LostMessages',
  dimensionsMap: { service: powertoolsServiceName },
} as const;

/** What the push flow emits for each signal it could not publish (lib/server/core/signal/announce.ts). */
export const signalsNotPublishedMetric = {
  namespace: metricsNamespace,
  metricName: 'SignalsNotPublished',
  dimensionsMap: { service: powertoolsServiceName },
} as const;

export type MeshAlarmsProps = {
  readonly deadLetterQueue: IQueue;
  /** Every function, by manifest name: each gets one alarm on its errors and throttles together. */
  readonly functions: ReadonlyMap<string, IFunction>;
  /**
   * The stepping flows (the rollout's, the apply job's), by construct id: an execution of one that
   * ends failed, timed out or aborted leaves its job `running` with nothing stepping it.
   * @default none
   */
  readonly steppingFlows?: ReadonlyMap<string, IStateMachine>;
  /**
   * Where the alarms go (an SNS topic, say).
   * @default no action: the alarms show in the console only
   */
  readonly alarmAction?: IAlarmAction;
};

/**
 * What someone must look at: anything in the dead-letter queue, any lost message, any signal
 * the push could not publish, any function error or throttle (the broker's authorizer among
 * them: a throttle there is someone knocking harder than its reserved concurrency), any execution
 * of a stepping flow that stopped without finishing its job. Every alarm
 * fires on the first occurrence, because each of these means a message or request did not do
 * what it should.
 */
export class MeshAlarms extends Construct {
  public readonly deadLetters: Alarm;
  public readonly lostMessages: Alarm;
  public readonly signalsNotPublished: Alarm;
  /** One alarm a function, on its errors and throttles summed: a stack holds at most 500 resources. */
  public readonly functionFailures: ReadonlyMap<string, Alarm>;
  /** One alarm a stepping flow, on its executions that ended without succeeding. */
  public readonly flowsStopped: ReadonlyMap<string, Alarm>;

  constructor(scope: Construct, id: string, props: MeshAlarmsProps) {
    super(scope, id);
    const period = Duration.minutes(1);
    this.deadLetters = this.anyAbove(
      'DeadLetters',
      props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ period, statistic: 'Maximum' }),
      'messages are waiting in the mesh dead-letter queue (lost or malformed, each with its reason)',
      props.alarmAction,
    );
    this.lostMessages = this.anyAbove(
      'LostMessages',
      new Metric({ ...lostMessagesMetric, period, statistic: 'Sum' }),
      'the control consumer let a held message go after two minutes (a "lost" line)',
      props.alarmAction,
    );
    this.signalsNotPublished = this.anyAbove(
      'SignalsNotPublished',
      new Metric({ ...signalsNotPublishedMetric, period, statistic: 'Sum' }),
      'the push could not publish a node signal to IoT: hosts catch up on reconnect or their safety fetch (6 h)',
      props.alarmAction,
    );
    const failures = new Map<string, Alarm>();
    for (const [name, fn] of props.functions) {
      // A series with no point in a period (Throttles, where nothing was throttled) would make
      // the sum missing too, and hide the errors beside it: each is filled with 0 first.
      const failed = new MathExpression({
        expression: 'FILL(errors, 0) + FILL(throttles, 0)',
        usingMetrics: { errors: fn.metricErrors({ period }), throttles: fn.metricThrottles({ period }) },
        period,
        label: `${name} errors and throttles`,
      });
      failures.set(
        name,
        this.anyAbove(
          `${pascalCase(name)}Failures`,
          failed,
          `mesh ${name} failed or was throttled`,
          props.alarmAction,
        ),
      );
    }
    this.functionFailures = failures;
    const stopped = new Map<string, Alarm>();
    for (const [name, machine] of props.steppingFlows ?? []) {
      const ended = new MathExpression({
        expression: 'FILL(failed, 0) + FILL(timedOut, 0) + FILL(aborted, 0)',
        usingMetrics: {
          failed: machine.metricFailed({ period }),
          timedOut: machine.metricTimedOut({ period }),
          aborted: machine.metricAborted({ period }),
        },
        period,
        label: `${name} executions failed, timed out or aborted`,
      });
      stopped.set(
        name,
        this.anyAbove(
          `${name}Stopped`,
          ended,
          `an execution of mesh ${name} ended without succeeding: its job stays running with nothing stepping it until resumed (mesh rollout resume ID)`,
          props.alarmAction,
        ),
      );
    }
    this.flowsStopped = stopped;
  }

  private anyAbove(
    id: string,
    metric: IMetric,
    description: string,
    action: IAlarmAction | undefined,
  ): Alarm {
    const alarm = new Alarm(this, id, {
      metric,
      threshold: 0,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: TreatMissingData.NOT_BREACHING,
      alarmDescription: description,
    });
    if (action) alarm.addAlarmAction(action);
    return alarm;
  }
}
