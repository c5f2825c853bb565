import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import middy from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { type ConsumerDeps, startBatch } from '../../core/control/consumer.ts';
import type { QueueRecord } from '../../core/control/ports.ts';
import type { CountedOccurrences } from '../../core/ports.ts';

/**
 * The control queue's consumer: Powertools' BatchProcessor with partial batch responses, and
 * our own group logic (lib/server/core/control/consumer.ts) instead of SqsFifoPartialProcessor,
 * which processes one record at a time and whose skipGroupOnError fails later records
 * without letting us hide them as long as the held one, nor set a held one aside for a newer.
 * Subjects run side by side; records of one subject take turns in batch order.
 */
export function controlConsumerHandler(parts: {
  readonly consumer: ConsumerDeps;
  readonly lostMessages?: CountedOccurrences;
}) {
  const deps = parts.consumer;
  return middy<SQSEvent, SQSBatchResponse, Error, Context>().handler(async (event, context) => {
    const records = new Map(event.Records.map((record) => [record.messageId, toQueueRecord(record)]));
    // an upgrade's carriers are moved within the invocation's time (settle.ts)
    const batch = startBatch(
      [...records.values()],
      typeof context?.getRemainingTimeInMillis === 'function'
        ? { ...deps, remainingMs: () => context.getRemainingTimeInMillis() }
        : deps,
    );
    // One processor per batch: the local event-source loop may run batches side by side in one process.
    const processor = new BatchProcessor(EventType.SQS);
    try {
      return await processPartialResponse(
        event,
        (record: SQSRecord) => batch.handle(records.get(record.messageId) ?? toQueueRecord(record)),
        processor,
        { context, processInParallel: true, throwOnFullBatchFailure: false },
      );
    } finally {
      // What this batch let go is published once, after it.
      await parts.lostMessages?.publish();
    }
  });
}

function toQueueRecord(record: SQSRecord): QueueRecord {
  const firstReceived = Number(record.attributes.ApproximateFirstReceiveTimestamp);
  return {
    messageId: record.messageId,
    receiptHandle: record.receiptHandle,
    body: record.body,
    groupId: record.attributes.MessageGroupId ?? '',
    receiveCount: Math.max(1, Number(record.attributes.ApproximateReceiveCount) || 1),
    firstReceivedAtMs: Number.isFinite(firstReceived) && firstReceived > 0 ? firstReceived : Date.now(),
  };
}
