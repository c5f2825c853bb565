import type { Message, SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { Consumer } from 'sqs-consumer';
import { makeSQSClient } from '../server/adapters/aws-clients.ts';
import type { MeshConfig } from '../server/setup/config.ts';
import { invocation } from './aws-quotas.ts';
import { asFunction } from './call-record.ts';
import { localLambdaContext } from './lambda-context.ts';
import { enforcingQuotas } from './sdk-quotas.ts';

export type SqsBatchHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse | undefined>;

export type EventSourceOptions = {
  readonly queueUrl: string;
  /** Made by `makePollerSQSClient`, so a stalled process does not give up a receive the queue answered. */
  readonly sqs: SQSClient;
  readonly handler: SqsBatchHandler;
  readonly functionName?: string;
  /** @default 10, the FIFO maximum, as the CDK event source */
  readonly batchSize?: number;
  /**
   * Pollers side by side, as Lambda runs several consumers of one queue; SQS keeps each
   * subject's order across them (a group in flight is not handed out again).
   * @default 3
   */
  readonly pollers?: number;
  /** Long-poll wait; short locally so a stop is quick. @default 2 */
  readonly waitTimeSeconds?: number;
  readonly onError?: (error: Error) => void;
};

export type RunningEventSource = { stop(): Promise<void> };

/**
 * How long a poller's request (a receive, a delete) may go unanswered. A receive the client gives
 * up on after the queue answered leaves its messages hidden for the queue's visibility timeout
 * (180 s for the control queue) and their group behind them: with the 3 s of the other clients, a
 * process stalled a second or so past a 2 s long poll (a loaded machine) did that. Lambda's own
 * poller has no such limit; this is far past any long poll and still lets a stop end.
 */
export const pollerRequestTimeoutMs = 30_000;

/** The SQS client for an event source's pollers (`pollerRequestTimeoutMs`). */
export function makePollerSQSClient(config: Pick<MeshConfig, 'region' | 'endpoints'>) {
  // Lambda's pollers' calls count against the queue's throughput as any other's
  return enforcingQuotas(makeSQSClient(config, { requestTimeoutMs: pollerRequestTimeoutMs }));
}

/**
 * An SQS event source that behaves like Lambda's for a FIFO queue, built on sqs-consumer:
 * batches of up to ten are handed to the handler as an SQSEvent; what the handler did not
 * report in batchItemFailures is deleted; a failed item is left exactly as the handler left
 * it (its visibility is not reset, so a hold's wait stands); a handler that throws fails the
 * whole batch, which stays on the queue. Stopping deletes nothing more: whatever is held or
 * in flight stays on the queue for the next run.
 */
export function startEventSource(options: EventSourceOptions): RunningEventSource {
  const functionName = options.functionName ?? 'control-consumer';
  const onError =
    options.onError ??
    ((error: Error) => process.stderr.write(`mesh event source (${functionName}): ${error.message}\n`));
  const consumers = Array.from({ length: options.pollers ?? 3 }, () => {
    const consumer = Consumer.create({
      queueUrl: options.queueUrl,
      sqs: options.sqs,
      batchSize: options.batchSize ?? 10,
      waitTimeSeconds: options.waitTimeSeconds ?? 2,
      attributeNames: [],
      messageSystemAttributeNames: ['All'],
      messageAttributeNames: ['All'],
      terminateVisibilityTimeout: false,
      suppressFifoWarning: true,
      strictReturn: true,
      handleMessageBatch: async (messages) => {
        const event: SQSEvent = { Records: messages.map((message) => toRecord(message, options.queueUrl)) };
        const response = await invocation(functionName, () =>
          options.handler(event, localLambdaContext(functionName)),
        );
        const failed = new Set((response?.batchItemFailures ?? []).map((item) => item.itemIdentifier));
        return messages.filter((message) => !failed.has(message.MessageId ?? ''));
      },
    });
    consumer.on('error', (error) => onError(error));
    consumer.on('processing_error', (error) => onError(error));
    // its polls, deletes and the handler's calls are the function's, as Lambda's poller uses its role
    asFunction(functionName, () => consumer.start());
    return consumer;
  });

  return {
    async stop() {
      for (const consumer of consumers) consumer.stop();
      // Let the batches in hand finish (their deletes included); the next poll is not made.
      const deadline = Date.now() + ((options.waitTimeSeconds ?? 2) + 30) * 1000;
      while (consumers.some((consumer) => consumer.status.isPolling) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
  };
}

/** A received message in the shape Lambda's SQS event source hands to the handler. */
function toRecord(message: Message, queueUrl: string): SQSRecord {
  const attributes = message.Attributes ?? {};
  const now = String(Date.now());
  const messageAttributes: SQSRecord['messageAttributes'] = {};
  for (const [name, value] of Object.entries(message.MessageAttributes ?? {})) {
    messageAttributes[name] = {
      dataType: value.DataType ?? 'String',
      ...(value.StringValue !== undefined ? { stringValue: value.StringValue } : {}),
    } as SQSRecord['messageAttributes'][string];
  }
  const name = queueUrl.split('/').pop() ?? 'queue';
  return {
    messageId: message.MessageId ?? '',
    receiptHandle: message.ReceiptHandle ?? '',
    body: message.Body ?? '',
    attributes: {
      ApproximateReceiveCount: attributes.ApproximateReceiveCount ?? '1',
      SentTimestamp: attributes.SentTimestamp ?? now,
      SenderId: attributes.SenderId ?? 'local',
      ApproximateFirstReceiveTimestamp: attributes.ApproximateFirstReceiveTimestamp ?? now,
      ...(attributes.SequenceNumber ? { SequenceNumber: attributes.SequenceNumber } : {}),
      ...(attributes.MessageGroupId ? { MessageGroupId: attributes.MessageGroupId } : {}),
      ...(attributes.MessageDeduplicationId
        ? { MessageDeduplicationId: attributes.MessageDeduplicationId }
        : {}),
    },
    messageAttributes,
    md5OfBody: message.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: `arn:aws:sqs:us-east-1:000000000000:${name}`,
    awsRegion: 'us-east-1',
  };
}
