import { ChangeMessageVisibilityCommand, SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { DeadLetterKind, QueueRecord, QueueSettlement } from '../../core/control/ports.ts';
import { fitDeadLetterBody } from './dead-letter-body.ts';

/**
 * Holds a message (shortens its visibility so it comes back after its wait) and copies a
 * message to the dead-letter queue with its reason in message attributes (`mesh.deadLetter`,
 * `mesh.reason`, …; docs/control-queue.md lists them for the people who read that queue).
 *
 * A body that would not fit beside these attributes under SQS's 256 KiB (a control message
 * near the limit, which the consumer finds malformed) is cut to fit rather than refused on
 * every receive; see dead-letter-body.ts.
 *
 * The dead letter's deduplication id is the original message id, so a copy sent twice (the
 * ack lost after the send) is kept once.
 */
export class SqsQueueSettlement implements QueueSettlement {
  readonly #client: SQSClient;
  readonly #controlQueueUrl: string;
  readonly #deadLetterQueueUrl: string;
  readonly #maxMessageBytes: number | undefined;

  constructor(options: {
    readonly client: SQSClient;
    readonly controlQueueUrl: string;
    readonly deadLetterQueueUrl: string;
    /** @default the dead-letter queue's own limit (lib/server/setup/resources.ts) */
    readonly maxMessageBytes?: number;
  }) {
    this.#client = options.client;
    this.#controlQueueUrl = options.controlQueueUrl;
    this.#deadLetterQueueUrl = options.deadLetterQueueUrl;
    this.#maxMessageBytes = options.maxMessageBytes;
  }

  async hold(record: QueueRecord, visibilitySeconds: number): Promise<void> {
    await this.#client.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: this.#controlQueueUrl,
        ReceiptHandle: record.receiptHandle,
        VisibilityTimeout: visibilitySeconds,
      }),
    );
  }

  async deadLetter(
    record: QueueRecord,
    letter: { kind: DeadLetterKind; reason: string; type?: string; subject?: string },
  ): Promise<void> {
    const attributes = {
      'mesh.deadLetter': text(letter.kind),
      'mesh.reason': text(letter.reason),
      ...(letter.type ? { 'mesh.type': text(letter.type) } : {}),
      ...(letter.subject ? { 'mesh.subject': text(letter.subject) } : {}),
      'mesh.messageId': text(record.messageId),
      'mesh.receiveCount': { DataType: 'Number', StringValue: String(record.receiveCount) },
    };
    const fitted = fitDeadLetterBody(
      record.body === '' ? '(empty)' : record.body,
      attributes,
      this.#maxMessageBytes,
    );
    await this.#client.send(
      new SendMessageCommand({
        QueueUrl: this.#deadLetterQueueUrl,
        MessageBody: fitted.body,
        MessageGroupId: (letter.subject ?? record.groupId ?? 'malformed').slice(0, 128) || 'malformed',
        MessageDeduplicationId: `dead-${record.messageId}`.slice(0, 128),
        MessageAttributes: { ...attributes, ...fitted.attributes },
      }),
    );
  }
}

const text = (value: string) => ({ DataType: 'String', StringValue: value.slice(0, 1000) || '-' });
