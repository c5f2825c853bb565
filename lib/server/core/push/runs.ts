import * as z from 'zod';
import { logLine, say } from '../coded-lines.ts';
import { pushLines } from '../mesh/log-lines.ts';
import type { Log } from '../ports.ts';
import { describeCause } from '../unavailable.ts';
import { type FlowState, flowStateSchema, pushRequestSchema } from './flow-schemas.ts';
import type { PushFlow, PushHandOvers, PushRequest } from './ports.ts';
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
  /** The paused state an invocation handed on (one page of names at most, about 66 KB). */
  readonly resume?: FlowState;
  /** When it was last handed on, and how many times: kept in the record it finishes. */
  readonly handedOn?: PushHandOvers;
};

export const pushJobSchema = z
  .object({
    pushId,
    request: pushRequestSchema,
    requestedBy: z.string().min(1).max(2048),
    resume: flowStateSchema.optional(),
    handedOn: z
      .object({ at: z.iso.datetime(), count: z.number().int().min(1) })
      .strict()
      .optional(),
  })
  .strict();

/**
 * The invocation running a push job, as Lambda gives it: its time left, and how it hands the job
 * on to a fresh asynchronous invocation of itself.
 */
export type PushInvocation = {
  readonly remainingMs: () => number;
  readonly handOn: (job: PushJob) => Promise<void>;
  /** @default legReserveMs */
  readonly reserveMs?: number;
};

/**
 * The time an invocation keeps for one more execution: Express's five minutes, which stop any
 * execution, and a minute to read the outcome from the work and write the record. Less left, the
 * paused push is handed on; push-run's 15 minutes thus run two executions.
 */
export const legReserveMs = 6 * 60_000;

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
 * be run again by Lambda (an asynchronous invoke) and push twice. Run in an invocation, the job
 * goes on from its paused state and is handed on before the invocation's time runs out.
 */
export async function runPushJob(
  input: unknown,
  deps: { readonly pushFlow: PushFlow; readonly log: Log },
  invoked?: PushInvocation,
) {
  const job = pushJobSchema.parse(input);
  const asker = {
    requestedBy: job.requestedBy,
    pushId: job.pushId,
    started: true,
    ...(job.handedOn ? { handedOn: job.handedOn } : {}),
  };
  try {
    if (invoked && deps.pushFlow.pushLeg) {
      const reserveMs = invoked.reserveMs ?? legReserveMs;
      await deps.pushFlow.pushLeg(
        job.request,
        {
          ...(job.resume !== undefined ? { resume: job.resume } : {}),
          hasTimeFor: () => invoked.remainingMs() > reserveMs,
          handOn: (paused, at) =>
            invoked.handOn({
              ...job,
              resume: flowStateSchema.parse(paused),
              handedOn: { at: at.toISOString(), count: (job.handedOn?.count ?? 0) + 1 },
            }),
        },
        asker,
      );
    } else await deps.pushFlow.push(job.request, asker);
  } catch (error) {
    logLine(deps.log, say(pushLines.runFailed, { pushId: job.pushId, reason: describeCause(error) }));
  }
}
