import { EventSourceMapping, type IFunction } from 'aws-cdk-lib/aws-lambda';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { throwIfProblems } from './names.ts';

export type ControlConsumerProps = {
  readonly queue: IQueue;
  readonly consumer: IFunction;
  /**
   * How many consumer instances may run at once; FIFO order still holds within each subject.
   * @default consumerConcurrency: 50,000 reports a minute with room to spare (docs/control-queue.md, "Throughput")
   */
  readonly maxConcurrency?: number;
};

/**
 * 50,000 reports a minute are 834 messages a second; an instance settles a batch of 10 subjects
 * side by side, about 100 messages a second, so 9 instances keep up and 20 leave room for a slow
 * store and retries, far inside the account's 1,000.
 */
export const consumerConcurrency = 20;

/** Lambda's own bounds for an SQS event source's maximum concurrency. */
const concurrencyBounds = [2, 1000] as const;

/**
 * The control queue's event source. Policy fixed here: batches of 10 (the FIFO maximum),
 * partial batch responses so one held message never redelivers its batch, and a maximum
 * concurrency so a burst of subjects cannot take the account's concurrency. The consumer's
 * role gets what reading the queue takes from its row's `control:consume` (grants.ts), not
 * from CDK's SqsEventSource, which would add GetQueueUrl that nothing calls; the mapping is
 * created after that role's policy, since Lambda checks it then.
 */
export class ControlConsumer extends Construct {
  public readonly mapping: EventSourceMapping;

  constructor(scope: Construct, id: string, props: ControlConsumerProps) {
    super(scope, id);
    const maxConcurrency = props.maxConcurrency ?? consumerConcurrency;
    const [low, high] = concurrencyBounds;
    throwIfProblems('ControlConsumer', [
      ...(Number.isInteger(maxConcurrency) && maxConcurrency >= low && maxConcurrency <= high
        ? []
        : [`maxConcurrency ${maxConcurrency} is outside ${low}–${high}`]),
    ]);
    this.mapping = new EventSourceMapping(this, 'Mapping', {
      target: props.consumer,
      eventSourceArn: props.queue.queueArn,
      batchSize: 10,
      reportBatchItemFailures: true,
      maxConcurrency,
    });
    if (props.consumer.role) this.mapping.node.addDependency(props.consumer.role);
  }
}
