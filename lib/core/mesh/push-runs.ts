import * as z from 'zod';
import type { Log, PushFlow, PushRequest } from '../ports.ts';
import { describeCause } from '../unavailable.ts';
import { type PushRecord, type PushRecordReader, pushId } from './push-records.ts';
import { pushRequestSchema } from './push-steps.ts';

/**
 * A push an operator asked for, run where no request waits on it: `POST /push` writes its
 * record, starts it and waits for the record to say it is done, as long as an answer may take;
 * a push that runs longer is answered with its id and followed by its record (`GET
 * /pushes/{push}`), never cut off unseen. On AWS it runs in the `push-run` function, invoked
 * without waiting; locally in-process.
 */
export type PushJob = {
  readonly pushId: string;
  readonly request: PushRequest;
  readonly requestedBy: string;
};

export const pushJobSchema = z
  .object({ pushId, request: pushRequestSchema, requestedBy: z.string().min(1).max(2048) })
  .strict();

/** Starts a push and returns at once; the push's record says how it went. */
export interface PushStarter {
  start(job: PushJob): Promise<void>;
}

/**
 * What `push-run` does with a job. Its record was written by the request that started it; a
 * failure is kept in the record and logged, never thrown, since an invocation that fails would
 * be run again by Lambda and push twice.
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
    deps.log.warn(`push ${job.pushId} failed; its record names what failed`, {
      pushId: job.pushId,
      error: describeCause(error),
    });
  }
}

/** Asks the record every `pollMs` until it is done or `waitMs` is up: the done record, else undefined. */
export async function waitForPush(
  id: string,
  deps: {
    readonly records: PushRecordReader;
    readonly waitMs: number;
    readonly pollMs?: number;
    readonly sleep?: (ms: number) => Promise<void>;
    readonly now?: () => number;
  },
): Promise<PushRecord | undefined> {
  const now = deps.now ?? Date.now;
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const deadline = now() + deps.waitMs;
  for (;;) {
    const record = await deps.records.read(id);
    if (record?.state === 'done') return record;
    if (now() >= deadline) return undefined;
    await sleep(Math.min(deps.pollMs ?? 250, Math.max(0, deadline - now())));
  }
}
