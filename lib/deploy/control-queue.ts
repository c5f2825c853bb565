import { Duration } from 'aws-cdk-lib';
import { DeduplicationScope, FifoThroughputLimit, Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import {
  consumerTimeoutSeconds,
  controlQueue,
  deadLetterQueue,
  type QueueDescription,
} from '../server/setup/resources.ts';

export type ControlQueueProps = {
  /**
   * The consumer's timeout; the queue's visibility is held to at least six times it.
   * @default consumerTimeoutSeconds from lib/server/setup/resources.ts
   */
  readonly consumerTimeout?: Duration;
};

/**
 * The FIFO control queue and its dead-letter queue, from lib/server/setup/resources.ts. Policy fixed here:
 * SQS-managed encryption, TLS enforced, a dead-letter queue always, high-throughput FIFO where the
 * description asks for it.
 */
export class ControlQueue extends Construct {
  public readonly queue: Queue;
  public readonly deadLetterQueue: Queue;

  constructor(scope: Construct, id: string, props: ControlQueueProps = {}) {
    super(scope, id);
    const consumerTimeout = props.consumerTimeout ?? Duration.seconds(consumerTimeoutSeconds);
    const visibility = Math.max(controlQueue.visibilityTimeoutSeconds, 6 * consumerTimeout.toSeconds());
    this.deadLetterQueue = this.fifo('DeadLetter', deadLetterQueue, deadLetterQueue.visibilityTimeoutSeconds);
    this.queue = this.fifo('Control', controlQueue, visibility);
  }

  private fifo(id: string, description: QueueDescription, visibilitySeconds: number): Queue {
    return new Queue(this, id, {
      fifo: true,
      contentBasedDeduplication: description.contentBasedDeduplication,
      ...(description.highThroughput
        ? {
            deduplicationScope: DeduplicationScope.MESSAGE_GROUP,
            fifoThroughputLimit: FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
          }
        : {
            deduplicationScope: DeduplicationScope.QUEUE,
            fifoThroughputLimit: FifoThroughputLimit.PER_QUEUE,
          }),
      visibilityTimeout: Duration.seconds(visibilitySeconds),
      retentionPeriod: Duration.seconds(description.messageRetentionSeconds),
      maxMessageSizeBytes: description.maximumMessageBytes,
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      ...(description.deadLetter
        ? {
            deadLetterQueue: {
              queue: this.deadLetterQueue,
              maxReceiveCount: description.deadLetter.maxReceiveCount,
            },
          }
        : {}),
    });
  }
}
