import * as z from 'zod';
import { nodeName } from '../names.ts';
import { flowEndSchema, flowStateSchema, maxWaveNodes, outcomeOf } from './flow-schemas.ts';
import type { PushLeg, PushOutcome, PushRequest } from './ports.ts';
import { emptyFold, foldSchema, newWorkId, type PushWork, readPage, readResults, workKeys } from './work.ts';

/**
 * A push run as one or more executions of its flow: each runs until the push is done or its time
 * is spent (Express stops an execution at 5 minutes), and the next starts from the state it
 * paused with, which is small (ids, counts, one page of names). Every execution sends at least
 * one page, so the chain ends. The outcome's lists are read from the push's work.
 *
 * With a leg (push-run), the chain starts from the leg's paused state and stops at a pause the
 * invocation has no time left for: that state is handed on (undefined is answered), so a push
 * of any size ends, in as many invocations as it needs.
 */
export async function pushInExecutions(
  request: PushRequest,
  work: PushWork,
  execute: (input: unknown) => Promise<unknown>,
): Promise<PushOutcome>;
export async function pushInExecutions(
  request: PushRequest,
  work: PushWork,
  execute: (input: unknown) => Promise<unknown>,
  leg: PushLeg,
): Promise<PushOutcome | undefined>;
export async function pushInExecutions(
  request: PushRequest,
  work: PushWork,
  execute: (input: unknown) => Promise<unknown>,
  leg?: PushLeg,
): Promise<PushOutcome | undefined> {
  let output = await execute(
    leg?.resume !== undefined ? { resume: leg.resume } : await flowInputOf(request, work),
  );
  for (;;) {
    const paused = flowStateSchema.safeParse(output);
    if (!paused.success || !paused.data.paused) break;
    if (leg && !leg.hasTimeFor()) {
      await leg.handOn(paused.data, new Date());
      return undefined;
    }
    output = await execute({ resume: paused.data });
  }
  return outcomeOfWork(work, output);
}

const waveNodes = z.array(nodeName).min(1).max(maxWaveNodes);

/**
 * What the flow starts from: the request and the work its lists go to, never a list of nodes. A
 * wave's nodes (up to 5,000 names, about 330 KB: over the 256 KiB an execution's input may be)
 * are kept in the work first.
 */
export async function flowInputOf(request: PushRequest, work: PushWork): Promise<unknown> {
  const { nodes, rollout, ...asked } = request;
  const id = request.pushId ?? newWorkId();
  if (nodes === undefined) return { ...asked, work: id };
  await work.put(id, workKeys.wave, [...new Set(waveNodes.parse(nodes))].sort());
  return {
    wave: true,
    work: id,
    ...(rollout !== undefined ? { rollout } : {}),
    ...(request.pushId !== undefined ? { pushId: request.pushId } : {}),
  };
}

/** The push contract from the flow's last state and the lists its steps kept in the work. */
export async function outcomeOfWork(work: PushWork, last: unknown): Promise<PushOutcome> {
  const end = flowEndSchema.parse(last);
  const [results, fold, behind] = await Promise.all([
    readResults(work, end.work, workKeys.results),
    work.read(end.work, workKeys.fold(end.rounds)),
    readPage(work, end.work, workKeys.behind),
  ]);
  const { unsendable, heldBack } = foldSchema.parse(fold ?? emptyFold);
  return outcomeOf({
    pushed: end.pushed,
    rounds: end.rounds,
    flushed: results.flatMap((result) => result.sent),
    behind,
    unsendable,
    heldBack,
  });
}
