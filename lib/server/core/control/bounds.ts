import { BuildTimeOutOfBoundsError, SequenceAheadError } from './errors.ts';
import type { BuildBody, ReportBody } from './messages.ts';

/**
 * The times a sender states, held to the control plane's clock. Each is checked twice: at the
 * HTTP edge, so the sender hears why, and by the consumer before the store, against whatever
 * else put a message on the queue.
 */

/**
 * How far a report's sequence may lead the control plane's clock. A host counts its sequence
 * from its clock in milliseconds (lib/clients/host/agent/run-loop.ts: never below the clock, one more
 * than the last), and its proofs already hold its clock to a minute of ours; ten minutes leave
 * room for that and for bursts, and bound how long one report can make its node's real ones
 * stale.
 */
export const reportSequenceLeadMs = 10 * 60_000;

/** How far a build's finishedAt may lead the time the control plane received it: CI clocks drift. */
export const buildClockSkewMs = 5 * 60_000;

/** How long before it was received a build may have finished: a result older than this is a wrong clock or field. */
export const buildMaxAgeMs = 30 * 24 * 3600_000;

export function latestAcceptedSequence(now: Date): number {
  return now.getTime() + reportSequenceLeadMs;
}

export function isSequenceAhead(sequence: number, now: Date): boolean {
  return sequence > latestAcceptedSequence(now);
}

/** Throws SequenceAheadError for a report whose sequence leads the clock by more than the bound. */
export function checkReportSequence(report: Pick<ReportBody, 'node' | 'sequence'>, now: Date): void {
  if (!isSequenceAhead(report.sequence, now)) return;
  throw new SequenceAheadError(report.node, report.sequence, {
    latestAccepted: latestAcceptedSequence(now),
    leadMs: reportSequenceLeadMs,
  });
}

/**
 * Throws BuildTimeOutOfBoundsError unless the build finished within `buildMaxAgeMs` before it
 * was received and at most `buildClockSkewMs` after, and was received no later than the skew
 * past `now` (a received time is the control plane's own; only a forged message leads it).
 */
export function checkBuildTimes(
  build: Pick<BuildBody, 'id' | 'finishedAt'>,
  receivedAt: Date,
  now: Date,
): void {
  const bounds = {
    earliest: new Date(receivedAt.getTime() - buildMaxAgeMs).toISOString(),
    latest: new Date(receivedAt.getTime() + buildClockSkewMs).toISOString(),
  };
  const finished = Date.parse(build.finishedAt);
  const refuse = (reason: string) => new BuildTimeOutOfBoundsError(`build ${build.id} ${reason}`, bounds);
  if (receivedAt.getTime() > now.getTime() + buildClockSkewMs)
    throw refuse(`was received at ${receivedAt.toISOString()}, ahead of the clock (${now.toISOString()})`);
  if (finished > Date.parse(bounds.latest))
    throw refuse(
      `finished at ${build.finishedAt}, after it was received (${receivedAt.toISOString()}) by more than ${buildClockSkewMs / 60_000} minutes`,
    );
  if (finished < Date.parse(bounds.earliest))
    throw refuse(
      `finished at ${build.finishedAt}, before it was received (${receivedAt.toISOString()}) by more than ${buildMaxAgeMs / (24 * 3600_000)} days`,
    );
}
