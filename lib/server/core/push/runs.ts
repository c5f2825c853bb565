import * as z from 'zod';
import { logLine, say } from '../coded-lines.ts';
import { pushLines } from '../mesh/log-lines.ts';
import type { Log } from '../ports.ts';
import { describeCause } from '../unavailable.ts';
import { pushRequestSchema } from './flow-schemas.ts';
import type { PushFlow, PushRequest } from './ports.ts';
import { pushId } from './records.ts';

/**
 * A push an operator asked for, run where it can outlive the request: `POST /push` writes its
 * record, runs it and waits for it as long as the request may still take (the invocation's
 * remaining time, docs/decisions/push-without-polling.md); a push that runs longer is answered
 * with its id and followed by its record (`GET /pushes/{push}`), never cut off unseen. On AWS it
 * runs in the `push-run` function, locally in-process.
 */
export type PushJob = {
  readonly pushId: string;
  readonly request: PushRequest;
  readonly requestedBy: string;
};

export const pushJobSchema = z
  .object({ pushId, request: pushRequestSchema, requestedBy: z.string().min(1).max(2048) })
  .strict();

/** Runs a push where it can outlive the request that asked for it; its record says how it went. */
export interface PushStarter {
  /**
   * Starts the push and waits for it at most `waitMs` (0: not at all): true when it is done, false
   * when it runs on. Never runs a push twice.
   */
  start(job: PushJob, waitMs: number): Promise<boolean>;
}

/**
 * What `push-run` does with a job. Its record was written by the request that started it; a
 * failure is kept in the record and logged, never thrown, since an invocation that fails would
 * be run again by Lambda (an asynchronous invoke) and push twice.
 */
export async function runPushJob(input: unknown, deps: { readonly pushFlow: PushFlow; readonly log: Log }) {
  const job = pushJobSchema.parse(input);
  try {
    await deps.pushFlow.push(job.request, {
      requestedBy: job.requestedBy,
      pushId: job.pushId,
      started: true,
    });
  } catch (error) {
    logLine(deps.log, say(pushLines.runFailed, { pushId: job.pushId, reason: describeCause(error) }));
  }
}
