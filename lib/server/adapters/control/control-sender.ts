import {
  SendMessageBatchCommand,
  type SendMessageBatchCommandOutput,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { ControlSender, Outgoing, Queued } from '../../core/control/ports.ts';
import { askStore, StoreUnavailableError } from '../../core/unavailable.ts';

/**
 * Puts control messages on the FIFO control queue: the subject is the MessageGroupId; the
 * queue deduplicates on content unless a MessageDeduplicationId says what a repeat is.
 * Sends in batches of ten (one SQS call per ten messages).
 */
export class SqsControlSender implements ControlSender {
  readonly #client: SQSClient;
  readonly #queueUrl: string;

  constructor(options: { readonly client: SQSClient; readonly queueUrl: string }) {
    this.#client = options.client;
    this.#queueUrl = options.queueUrl;
  }

  async send(messages: readonly Outgoing[]): Promise<readonly Queued[]> {
    const queued: Queued[] = [];
    for (let start = 0; start < messages.length; start += 10) {
      const chunk = messages.slice(start, start + 10);
      const answer: SendMessageBatchCommandOutput = await askStore(what, () =>
        this.#client.send(
          new SendMessageBatchCommand({
            QueueUrl: this.#queueUrl,
            Entries: chunk.map((outgoing, index) => ({
              Id: String(index),
              MessageBody: queueSafeJson(outgoing.message),
              MessageGroupId: outgoing.message.subject,
              ...(outgoing.deduplicationId ? { MessageDeduplicationId: outgoing.deduplicationId } : {}),
            })),
          }),
        ),
      );
      const failed = answer.Failed ?? [];
      if (failed.length > 0) {
        const detail = failed.map((entry) => `${entry.Code ?? 'failed'}`).join(', ');
        throw new StoreUnavailableError(what, {
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
  }
}

const what = 'putting messages on the control queue';

/**
 * SQS takes only #x9, #xA, #xD, #x20–#xD7FF, #xE000–#xFFFD and #x10000–#x10FFFF in a body and
 * refuses the whole message otherwise. A host's free text (a report's `step`) may hold U+FFFE,
 * say, and the emulators refuse every character past U+FFFF too: every character outside
 * #x20–#xD7FF and #xE000–#xFFFD is written as a JSON escape (`\uXXXX`, a pair of them past
 * U+FFFF), which JSON.parse reads back as the same text. Outside strings JSON.stringify writes
 * ASCII only, so escaping the whole text touches nothing else.
 */
export function queueSafeJson(value: unknown): string {
  return JSON.stringify(value).replace(/[^\u0020-\ud7ff\ue000-\ufffd]/gu, (char) =>
    char
      .split('')
      .map((unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`)
      .join(''),
  );
}
