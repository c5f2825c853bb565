import { DeleteMessageBatchCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { startEventSource } from '../lib/local/event-source.ts';
import { localPartsFor } from '../lib/local/parts.ts';
import { makeSQSClient } from '../lib/server/adapters/aws-clients.ts';
import { SqsControlSender } from '../lib/server/adapters/control/control-sender.ts';
import { SqsQueueSettlement } from '../lib/server/adapters/control/queue-settlement.ts';
import { controlConsumerHandler } from '../lib/server/api/handlers/control-consumer.ts';
import { localActor } from '../lib/server/core/audit/record.ts';
import { envelope, parseControlMessage } from '../lib/server/core/control/messages.ts';
import type { MeshConfig } from '../lib/server/setup/config.ts';
import { benchEnvironment } from './support/environment.ts';
import { median } from './support/stats.ts';
import type { BenchTable } from './support/table.ts';

const messagesPerRound = 600;
const nodesPerRound = 100;
const rounds = 3;

/** Counts every SQS API call a client makes, by command, with an SDK middleware. */
function countCalls(client: SQSClient) {
  const counts = new Map<string, number>();
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const name = context.commandName ?? 'unknown';
      counts.set(name, (counts.get(name) ?? 0) + 1);
      return next(args);
    },
    { step: 'initialize', name: 'meshCountCalls' },
  );
  return {
    reset: () => counts.clear(),
    total: () => [...counts.values()].reduce((sum, count) => sum + count, 0),
    detail: () => [...counts].map(([name, count]) => `${name.replace(/Command$/, '')} ${count}`).join(', '),
  };
}

const nodeOf = (index: number) => `bench-${index % nodesPerRound}`;
const reportsPerNode = messagesPerRound / nodesPerRound;

/** A round's reports: each node's sequences continue from the rounds before, so every one is newer. */
async function fill(sqs: SQSClient, config: MeshConfig, fillNumber: number) {
  const sender = new SqsControlSender({ client: sqs, queueUrl: config.controlQueueUrl });
  const sentAt = new Date().toISOString();
  const messages = Array.from({ length: messagesPerRound }, (_, index) => ({
    message: envelope('report', {
      node: nodeOf(index),
      sequence: fillNumber * reportsPerNode + Math.floor(index / nodesPerRound) + 1,
      state: 'applied' as const,
      revision: 1,
      sentAt,
    }),
  }));
  await sender.send(messages);
}

/** Queue-draining throughput: reports through the consumer on the local loop vs a raw loop. */
export async function run(): Promise<BenchTable[]> {
  const environment = await benchEnvironment();
  try {
    const config = await environment.provision('bench-queue');
    const setup = makeSQSClient(config);
    const rawSqs = makeSQSClient(config);
    const rawCalls = countCalls(rawSqs);
    const loopSqs = makeSQSClient(config);
    const loopCalls = countCalls(loopSqs);
    // The consumer's parts, its queue calls through the counted client.
    const quiet = { info: () => {}, warn: () => {}, error: () => {} };
    const parts = localPartsFor(config, {
      overrides: {
        log: quiet,
        sender: new SqsControlSender({ client: loopSqs, queueUrl: config.controlQueueUrl }),
        settlement: new SqsQueueSettlement({ client: loopSqs, ...config }),
      },
    });
    const reports = parts.reports;
    // Reports are recorded only for nodes that exist, of revisions they were sent.
    for (let index = 0; index < nodesPerRound; index += 1) {
      await parts.meshService.addNode(nodeOf(index), {}, localActor());
      await parts.meshService.assign(nodeOf(index), 'web', null, localActor());
    }
    await parts.pushFlow.push({ behind: true, maxRounds: 50 });

    /** The floor: receive ten, the same guarded write per report as the consumer's, one batch delete. */
    async function rawLoop() {
      let done = 0;
      while (done < messagesPerRound) {
        const received = await rawSqs.send(
          new ReceiveMessageCommand({
            QueueUrl: config.controlQueueUrl,
            MaxNumberOfMessages: 10,
            WaitTimeSeconds: 1,
            MessageSystemAttributeNames: ['All'],
          }),
        );
        const messages = received.Messages ?? [];
        if (messages.length === 0) continue;
        await Promise.all(
          messages.map(async (message) => {
            const parsed = parseControlMessage(message.Body ?? '');
            if (parsed.ok && parsed.message.type === 'report')
              await reports.recordReport(parsed.message.body, {
                heardAt: new Date().toISOString(),
                queuedAt: parsed.message.sentAt,
              });
          }),
        );
        await rawSqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: config.controlQueueUrl,
            Entries: messages.map((message, index) => ({
              Id: String(index),
              ReceiptHandle: message.ReceiptHandle,
            })),
          }),
        );
        done += messages.length;
      }
    }

    const handler = controlConsumerHandler(parts);

    async function consumerLoop() {
      let done = 0;
      let finished = () => {};
      const all = new Promise<void>((resolve) => {
        finished = resolve;
      });
      const source = startEventSource({
        queueUrl: config.controlQueueUrl,
        sqs: loopSqs,
        pollers: 1,
        waitTimeSeconds: 1,
        handler: async (event, context) => {
          const response = await handler(event, context);
          done += event.Records.length - response.batchItemFailures.length;
          if (done >= messagesPerRound) finished();
          return response;
        },
      });
      await all;
      return source;
    }

    const raw: number[] = [];
    const consumer: number[] = [];
    const rawCallsPerMessage: number[] = [];
    const consumerCallsPerMessage: number[] = [];
    const detail = { raw: '', consumer: '' };
    for (let round = 0; round < rounds; round += 1) {
      await fill(setup, config, round * 2);
      rawCalls.reset();
      let started = performance.now();
      await rawLoop();
      raw.push(messagesPerRound / ((performance.now() - started) / 1000));
      rawCallsPerMessage.push(rawCalls.total() / messagesPerRound);
      detail.raw = rawCalls.detail();

      await fill(setup, config, round * 2 + 1);
      loopCalls.reset();
      started = performance.now();
      const source = await consumerLoop();
      consumer.push(messagesPerRound / ((performance.now() - started) / 1000));
      await source.stop();
      // The stop waits out the last (empty) long poll; those calls are counted, as Lambda's would be.
      consumerCallsPerMessage.push(loopCalls.total() / messagesPerRound);
      detail.consumer = loopCalls.detail();
    }
    for (const client of [setup, rawSqs, loopSqs]) client.destroy();

    const ratio = median(consumer) / median(raw);
    return [
      {
        title: `Control queue: ${messagesPerRound} reports over ${nodesPerRound} nodes, ${rounds} rounds (median)`,
        columns: ['loop', 'reports/s', 'SQS calls/message', 'goal'],
        rows: [
          [
            'raw loop (receive 10, the same guarded write each, batch delete)',
            median(raw),
            median(rawCallsPerMessage),
            '',
          ],
          [
            'consumer on the local event-source loop (1 poller)',
            median(consumer),
            median(consumerCallsPerMessage),
            '≤ 1.3 calls/message',
          ],
          ['consumer / raw', ratio, '', '≥ 0.8'],
        ],
        notes: [
          `calls in the last round: raw ${detail.raw}; consumer ${detail.consumer}`,
          'fauxqs hands out one message per FIFO group per receive; the consumer logs through a no-op log here',
        ],
      },
    ];
  } finally {
    await environment.stop();
  }
}
