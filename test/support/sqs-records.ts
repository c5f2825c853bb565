import type { SQSRecord } from 'aws-lambda';
import type { ControlMessage } from '../../lib/server/core/control/messages.ts';

/** A control message as Lambda's SQS event source hands it to the consumer, received once just now. */
export function sqsRecordOf(message: ControlMessage, messageId: string): SQSRecord {
  return {
    messageId,
    receiptHandle: `receipt-${messageId}`,
    body: JSON.stringify(message),
    attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: String(Date.now()),
      SenderId: 'test',
      ApproximateFirstReceiveTimestamp: String(Date.now()),
      MessageGroupId: message.subject,
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:control.fifo',
    awsRegion: 'us-east-1',
  };
}
