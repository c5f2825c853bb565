import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, DynamoDBRecord } from 'aws-lambda';
import { logLine, say } from '../../core/coded-lines.ts';
import { anyHold, type HoldView } from '../../core/hold/held-back.ts';
import type { HoldReader } from '../../core/hold/ports.ts';
import type { Log } from '../../core/ports.ts';
import { summaryLines } from '../../core/summary/log-lines.ts';
import type { SummaryCounters, SummaryReader, SummaryRebuild } from '../../core/summary/ports.ts';
import type { Change } from '../../core/summary/stream.ts';
import type { Summary } from '../../core/summary/summary.ts';
import { actorOf } from '../caller.ts';
import { json } from '../http.ts';
import { httpEdge, type Refusing } from '../http-edge.ts';
import { meshProblem } from '../mesh-problems.ts';

/**
 * The summary (docs/decisions/summary-from-the-stream.md): the route that reads it, and the
 * aggregator the inventory table's stream feeds.
 */

/** GET /summary: the counters, read without reading any node. */
export const meshSummaryHandler = (
  parts: { readonly summary: SummaryReader; readonly holds: HoldReader; readonly log?: Log } & Refusing,
) =>
  middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(httpEdge({ mapError: meshProblem, log: parts.log, refusals: parts.refusals }))
    .handler(async () => {
      const [summary, holds] = await Promise.all([parts.summary.summary(), parts.holds.view([])]);
      return json(200, withHolds(summary, holds));
    });

/** The summary with what holds nodes back, when something does. */
function withHolds(summary: Summary, holds: HoldView): Summary {
  if (!anyHold(holds)) return summary;
  return {
    ...summary,
    heldBack: {
      rollouts: [...holds.rollouts].map(([id, r]) => ({ id, state: r.state, notSent: r.notSent ?? 0 })),
      freezes: holds.freezes.map((f) => ({
        on: f.on,
        reason: f.reason,
        ...(f.until ? { until: f.until } : {}),
      })),
    },
  };
}

/** POST /summary/rebuild: the counters counted again from a full read; answers the summary counted. */
export const meshSummaryRebuildHandler = (
  parts: { readonly summary: SummaryRebuild; readonly log?: Log } & Refusing,
) =>
  middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(httpEdge({ mapError: meshProblem, log: parts.log, refusals: parts.refusals }))
    .handler(async (event) => json(200, await parts.summary.rebuild(actorOf(event))));

/**
 * A batch of one shard, as Lambda's event source mapping hands it with a tumbling window (which
 * is what puts `shardId` in the event; the window's state is not used, but must be answered).
 */
export type StreamEvent = { readonly Records: readonly DynamoDBRecord[]; readonly shardId?: string };
export type StreamResponse = { readonly state: Record<string, string> };

/**
 * The stream aggregator: the batch's changes applied to the counters once, past the shard's
 * watermark. A failure throws, so the event source delivers the batch again (halved on AWS,
 * bisectBatchOnError); what was counted before the failure is skipped then.
 */
export const summaryAggregatorHandler =
  (parts: { readonly summary: SummaryCounters; readonly log?: Log } & Refusing) =>
  async (event: StreamEvent): Promise<StreamResponse> => {
    const changes = event.Records.map(changeOf);
    if (changes.length === 0) return { state: {} };
    const shard = event.shardId ?? 'unknown';
    const applied = await parts.summary.apply(shard, changes);
    if (applied.lost > 0 && parts.log)
      logLine(
        parts.log,
        say(summaryLines.lost, {
          shard,
          lost: applied.lost,
          first: changes[0]?.sequence ?? '',
          last: changes.at(-1)?.sequence ?? '',
          reason: applied.reason ?? 'refused by the store',
        }),
      );
    return { state: {} };
  };

const imageOf = (image: Record<string, unknown> | undefined) =>
  image ? unmarshall(image as Record<string, AttributeValue>) : undefined;

function changeOf(record: DynamoDBRecord): Change {
  const madeAt = record.dynamodb?.ApproximateCreationDateTime;
  return {
    sequence: record.dynamodb?.SequenceNumber ?? '0',
    before: imageOf(record.dynamodb?.OldImage),
    after: imageOf(record.dynamodb?.NewImage),
    ...(typeof madeAt === 'number' ? { madeAt } : {}),
  };
}
