import { Duration } from 'aws-cdk-lib';
import type { RestApi } from 'aws-cdk-lib/aws-apigateway';
import {
  Alarm,
  ComparisonOperator,
  type IAlarmAction,
  type IMetric,
  MathExpression,
  Metric,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import type { ITableV2 } from 'aws-cdk-lib/aws-dynamodb';
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
  /** The state machines, by what they run: each gets an alarm on failed and on timed-out executions. */
  readonly stateMachines?: ReadonlyMap<string, IStateMachine>;
  /**
   * The function each stepping flow's Task runs (the rollout's, the apply job's), by flow name: a
   * job whose step keeps failing has not moved.
   */
  readonly steps?: ReadonlyMap<string, IFunction>;
  /** The API: an alarm on its 5XX answers. */
  readonly api?: RestApi;
  /** The tables, by name: an alarm on their throttled reads and writes. */
  readonly tables?: ReadonlyMap<string, ITableV2>;
  /**
   * Where every alarm goes, and its return to OK (the stack's SNS topic).
   * @default no action: the alarms show in the console only
   */
  readonly alarmAction?: IAlarmAction;
};

/** An alarm's bound: at least `atLeast` in a period, in `periods` periods in a row. */
type Bound = { readonly atLeast: number; readonly periods?: number };

const fiveMinutes = Duration.minutes(5);

/**
 * What someone must look at, each alarm with the stack's action (an SNS topic) on alarm and on
 * its return to OK:
 * - on the first occurrence, what is never a stray: anything in the dead-letter queue, any lost
 *   message, any signal the push could not publish, a rollout or apply flow that failed or timed
 *   out (its job is left `running` with nothing to step it), any timed-out execution;
 * - what one stray would not justify waking someone for, on a repeat: a function's errors and
 *   throttles (3 in 5 minutes), the push flow's failed executions (3 in 5 minutes: its caller
 *   sees each and may try again), the API's 5XX answers (5 in 5 minutes), a table's throttled
 *   requests (10 in 5 minutes; the SDK retries each);
 * - a job that has not moved: its step failing in each of three 5-minute periods in a row, longer
 *   than a passing fault lasts, while the Task's own retries go on.
 */
export class MeshAlarms extends Construct {
  public readonly deadLetters: Alarm;
  public readonly lostMessages: Alarm;
  public readonly signalsNotPublished: Alarm;
  /** One alarm a function, on its errors and throttles summed: each row costs one resource here. */
  public readonly functionFailures: ReadonlyMap<string, Alarm>;
  readonly #action: IAlarmAction | undefined;

  constructor(scope: Construct, id: string, props: MeshAlarmsProps) {
    super(scope, id);
    this.#action = props.alarmAction;
    const period = Duration.minutes(1);
    const first: Bound = { atLeast: 1 };
    this.deadLetters = this.above(
      'DeadLetters',
      props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ period, statistic: 'Maximum' }),
      'messages are waiting in the mesh dead-letter queue (lost or malformed, each with its reason)',
      first,
    );
    this.lostMessages = this.above(
      'LostMessages',
      new Metric({ ...lostMessagesMetric, period, statistic: 'Sum' }),
      'the control consumer let a held message go after two minutes (a "lost" line)',
      first,
    );
    this.signalsNotPublished = this.above(
      'SignalsNotPublished',
      new Metric({ ...signalsNotPublishedMetric, period, statistic: 'Sum' }),
      'the push could not publish a node signal to IoT: hosts catch up on reconnect or their safety fetch (6 h)',
      first,
    );
    const failures = new Map<string, Alarm>();
    for (const [name, fn] of props.functions) {
      // A series with no point in a period (Throttles, where nothing was throttled) would make
      // the sum missing too, and hide the errors beside it: each is filled with 0 first.
      const failed = new MathExpression({
        expression: 'FILL(errors, 0) + FILL(throttles, 0)',
        usingMetrics: {
          errors: fn.metricErrors({ period: fiveMinutes }),
          throttles: fn.metricThrottles({ period: fiveMinutes }),
        },
        period: fiveMinutes,
        label: `${name} errors and throttles`,
      });
      failures.set(
        name,
        this.above(
          `${pascalCase(name)}Failures`,
          failed,
          `mesh ${name} failed or was throttled 3 times or more in 5 minutes`,
          { atLeast: 3 },
        ),
      );
    }
    this.functionFailures = failures;

    for (const [name, machine] of props.stateMachines ?? []) {
      const stepping = props.steps?.has(name) ?? false;
      // an aborted stepping execution strands its job as a failed one does
      const ended = stepping
        ? new MathExpression({
            expression: 'FILL(failed, 0) + FILL(aborted, 0)',
            usingMetrics: {
              failed: machine.metricFailed({ period: fiveMinutes, statistic: 'Sum' }),
              aborted: machine.metricAborted({ period: fiveMinutes, statistic: 'Sum' }),
            },
            period: fiveMinutes,
            label: `${name} executions failed or aborted`,
          })
        : machine.metricFailed({ period: fiveMinutes, statistic: 'Sum' });
      this.above(
        `${pascalCase(name)}ExecutionsFailed`,
        ended,
        stepping
          ? `a mesh ${name} execution failed or was aborted: its job is left running with nothing to step it (resume or abort it)`
          : `mesh ${name} executions failed 3 times or more in 5 minutes`,
        stepping ? first : { atLeast: 3 },
      );
      this.above(
        `${pascalCase(name)}ExecutionsTimedOut`,
        machine.metricTimedOut({ period: fiveMinutes, statistic: 'Sum' }),
        `a mesh ${name} execution timed out`,
        first,
      );
    }
    for (const [name, step] of props.steps ?? []) {
      this.above(
        `${pascalCase(name)}NotMoving`,
        step.metricErrors({ period: fiveMinutes, statistic: 'Sum' }),
        `the mesh ${name} step has failed in each of the last three 5-minute periods: its job has not moved for 15 minutes`,
        { atLeast: 1, periods: 3 },
      );
    }
    if (props.api) {
      this.above(
        'Api5xx',
        props.api.metricServerError({ period: fiveMinutes, statistic: 'Sum' }),
        'the mesh API answered 5XX 5 times or more in 5 minutes (503 try_again: the store was unreachable)',
        { atLeast: 5 },
      );
    }
    for (const [name, table] of props.tables ?? []) {
      this.above(
        `${pascalCase(name)}TableThrottles`,
        new MathExpression({
          expression: 'FILL(reads, 0) + FILL(writes, 0)',
          usingMetrics: {
            reads: table.metric('ReadThrottleEvents', { period: fiveMinutes, statistic: 'Sum' }),
            writes: table.metric('WriteThrottleEvents', { period: fiveMinutes, statistic: 'Sum' }),
          },
          period: fiveMinutes,
          label: `${name} throttled reads and writes`,
        }),
        `the mesh ${name} table throttled 10 requests or more in 5 minutes`,
        { atLeast: 10 },
      );
    }
  }

  /** Gives an alarm made elsewhere (the summary aggregator's) this construct's action. */
  notify(alarm: Alarm): void {
    if (!this.#action) return;
    alarm.addAlarmAction(this.#action);
    alarm.addOkAction(this.#action);
  }

  private above(id: string, metric: IMetric, description: string, bound: Bound): Alarm {
    const periods = bound.periods ?? 1;
    const alarm = new Alarm(this, id, {
      metric,
      threshold: bound.atLeast,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: periods,
      datapointsToAlarm: periods,
      treatMissingData: TreatMissingData.NOT_BREACHING,
      alarmDescription: description,
    });
    this.notify(alarm);
    return alarm;
  }
}
