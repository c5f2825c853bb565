import { Duration } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import type { ITableV2 } from 'aws-cdk-lib/aws-dynamodb';
import {
  EventSourceMapping,
  FilterCriteria,
  FilterRule,
  type IFunction,
  StartingPosition,
} from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import { aggregatorBatchSize, countedPartitionPrefix } from '../server/core/summary/stream.ts';
import { throwIfProblems } from './names.ts';

export type SummaryAggregatorProps = {
  readonly table: ITableV2;
  readonly aggregator: IFunction;
  /**
   * How far behind the stream the aggregator may fall before its alarm fires.
   * @default one hour, well inside the stream's 24 h retention
   */
  readonly alarmAfter?: Duration;
};

/** A batch of a shard: 100 changes sum to a few counter updates (docs/decisions/summary-from-the-stream.md). */
const batchSize = aggregatorBatchSize;

/**
 * The inventory stream's event source for the summary's aggregator. Policy fixed here:
 *
 * - one batch per shard at a time (parallelization factor 1), from the shard's start, so a
 *   shard's changes are applied in their order and its watermark only moves forward;
 * - a tumbling window, used only because it is what puts the shard's id in the event; the
 *   window's state is not kept;
 * - only the changes of node partitions pass the filter, so the counters' own writes on the
 *   stream do not invoke the aggregator again;
 * - a failed batch is halved and retried until its records leave the stream: a store that cannot
 *   be asked holds the shard, and the aggregator's watermark counts each change once whatever
 *   is delivered twice; a run the store refuses for good is counted as lost by the aggregator
 *   itself (`GET /summary` says `exact: false`), so nothing is let go here;
 * - an alarm when the oldest record waiting is older than `alarmAfter`.
 *
 * The aggregator's role reads the stream through its row's `summary:count` (grants.ts); the
 * mapping is created after that role's policy, since Lambda checks it then.
 */
export class SummaryAggregator extends Construct {
  public readonly mapping: EventSourceMapping;
  public readonly falling: Alarm;

  constructor(scope: Construct, id: string, props: SummaryAggregatorProps) {
    super(scope, id);
    const streamArn = props.table.tableStreamArn;
    const alarmAfter = props.alarmAfter ?? Duration.hours(1);
    throwIfProblems('SummaryAggregator', [
      ...(streamArn ? [] : ['the table has no stream: give it one (lib/server/setup/resources.ts, stream)']),
      ...(alarmAfter.toSeconds() < 60 || alarmAfter.toSeconds() > 20 * 3600
        ? [`alarmAfter ${alarmAfter.toHumanString()} is outside 1 minute–20 hours`]
        : []),
    ]);
    this.mapping = new EventSourceMapping(this, 'Mapping', {
      target: props.aggregator,
      eventSourceArn: streamArn as string,
      startingPosition: StartingPosition.TRIM_HORIZON,
      batchSize,
      parallelizationFactor: 1,
      tumblingWindow: Duration.seconds(60),
      bisectBatchOnError: true,
      filters: [
        FilterCriteria.filter({
          dynamodb: { Keys: { pk: { S: FilterRule.beginsWith(countedPartitionPrefix) } } },
        }),
      ],
    });
    if (props.aggregator.role) this.mapping.node.addDependency(props.aggregator.role);
    this.falling = new Alarm(this, 'FallingBehind', {
      metric: props.aggregator.metric('IteratorAge', { period: Duration.minutes(5), statistic: 'Maximum' }),
      threshold: alarmAfter.toMilliseconds(),
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
      alarmDescription:
        'the summary aggregator is behind the inventory stream: GET /summary is late, and changes older than 24 h would be lost',
    });
  }
}
