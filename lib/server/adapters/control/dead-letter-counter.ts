import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { DeadLetterDepth } from '../../core/control/dead-letter-notes.ts';
import type { DeadLetterCounter } from '../../core/control/ports.ts';
import { askStore } from '../../core/unavailable.ts';

/**
 * Reads the dead-letter queue's counts, which receive nothing: the console compares them with
 * the noted list, so a copy whose note could not be written (the store was away) still shows.
 */
export class SqsDeadLetterCounter implements DeadLetterCounter {
  readonly #client: SQSClient;
  readonly #queueUrl: string;

  constructor(options: { readonly client: SQSClient; readonly queueUrl: string }) {
    this.#client = options.client;
    this.#queueUrl = options.queueUrl;
  }

  async depth(): Promise<DeadLetterDepth> {
    const { Attributes } = await askStore('the dead-letter queue', () =>
      this.#client.send(
        new GetQueueAttributesCommand({
          QueueUrl: this.#queueUrl,
          AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
        }),
      ),
    );
    return {
      approximateMessages: Number(Attributes?.ApproximateNumberOfMessages ?? 0),
      approximateInFlight: Number(Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0),
    };
  }
}
