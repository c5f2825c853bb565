import {
  SendMessageBatchCommand,
  type SendMessageBatchCommandOutput,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { StoreUnavailableError } from '../../core/control/errors.ts';
import type { ControlSender, Outgoing, Queued } from '../../core/control/ports.ts';
import { isTransientFault } from '../../core/faults.ts';

/**
 * Puts control messages on the FIFO control queue: the subject is the MessageGroupId; the
 * queue deduplicates on content unless a MessageDeduplicationId says what a repeat is.
 * Sends in batches of ten (one SQS call per ten messages).
 */
export function createControlSender(client: SQSClient, queueUrl: string): ControlSender {
  return {
    async send(messages: readonly Outgoing[]) {
      const queued: Queued[] = [];
      for (let start = 0; start < messages.length; start += 10) {
        const chunk = messages.slice(start, start + 10);
        let answer: SendMessageBatchCommandOutput;
        try {
          answer = await client.send(
            new SendMessageBatchCommand({
              QueueUrl: queueUrl,
              Entries: chunk.map((outgoing, index) => ({
                Id: String(index),
                MessageBody: JSON.stringify(outgoing.message),
                MessageGroupId: outgoing.message.subject,
                ...(outgoing.deduplicationId ? { MessageDeduplicationId: outgoing.deduplicationId } : {}),
              })),
            }),
          );
        } catch (error) {
          if (isTransientFault(error))
            throw new StoreUnavailableError('putting messages on the control queue', { cause: error });
          throw error;
        }
        const failed = answer.Failed ?? [];
        if (failed.length > 0) {
          const detail = failed.map((entry) => `${entry.Code ?? 'failed'}`).join(', ');
          throw new StoreUnavailableError('putting messages on the control queue', {
            cause: new Error(`${failed.length} of ${chunk.length} not queued (${detail})`),
          });
        }
        for (const success of answer.Successful ?? []) {
          const outgoing = chunk[Number(success.Id)];
          if (outgoing && success.MessageId)
            queued.push({ subject: outgoing.message.subject, messageId: success.MessageId });
        }
      }
      return queued;
    },
  };
}
