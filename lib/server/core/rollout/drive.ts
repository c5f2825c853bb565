import { logLine, say } from '../coded-lines.ts';
import { pushLines } from '../mesh/log-lines.ts';
import type { Log } from '../ports.ts';
import { describeCause } from '../unavailable.ts';
import type { Decision } from './advance.ts';
import { isDriven } from './claims.ts';
import { RolloutNotFoundError, RolloutRaceError } from './errors.ts';
import type { RolloutStore } from './ports.ts';
import type { RolloutRecord } from './record.ts';
import type { Rollouts } from './service.ts';

/** A step that claimed or let go of claims and has more to do: the driver goes on at once, not after its tick. */
const hasMore = (decision: Decision) =>
  decision.kind === 'claiming' ||
  decision.kind === 'claimed' ||
  decision.kind === 'superseded' ||
  decision.kind === 'refused' ||
  (decision.kind === 'releasing' && decision.released < decision.upto);

/** What a step's log line says of it. */
function reasonOf(decision: Decision): string | undefined {
  switch (decision.kind) {
    case 'send':
      return `wave ${decision.wave + 1}: ${decision.nodes.length} nodes`;
    case 'claiming':
      return `${decision.claimed} of ${decision.total} nodes claimed`;
    case 'claimed':
      return `all ${decision.total} nodes claimed; wave 1 next`;
    case 'superseded':
      return `rollout ${decision.rollout} superseded`;
    case 'releasing':
      return `${decision.released} of ${decision.upto} claims let go`;
    default:
      return 'reason' in decision ? decision.reason : undefined;
  }
}

/**
 * One tick of a rollout driver: every running rollout (found by its record, so a driver that
 * starts again resumes them all) is stepped once. A step another driver won is left to it; a
 * step that failed is logged and taken again on the next tick, which the record makes safe.
 * True when a step claimed (or let go) and has more to do, so the next tick need not wait.
 */
export async function driveRunning(
  deps: { readonly rollouts: Rollouts; readonly rolloutStore: RolloutStore; readonly log: Log },
  only?: readonly string[],
): Promise<boolean> {
  let ids: readonly string[];
  try {
    ids = only ?? (await deps.rolloutStore.running());
  } catch (error) {
    // the store away: the next tick asks again; a driver never stops for it
    logLine(
      deps.log,
      say(pushLines.rolloutStepFailed, { rollout: '(the running list)', reason: describeCause(error) }),
    );
    return false;
  }
  let more = false;
  for (const id of ids) {
    try {
      const { decision } = await deps.rollouts.step(id);
      if (decision.kind === 'wait' || decision.kind === 'idle') continue;
      more ||= hasMore(decision);
      const reason = reasonOf(decision);
      logLine(
        deps.log,
        say(pushLines.rolloutMoved, { rollout: id, decision: decision.kind, ...(reason ? { reason } : {}) }),
      );
    } catch (error) {
      if (error instanceof RolloutRaceError) continue;
      logLine(deps.log, say(pushLines.rolloutStepFailed, { rollout: id, reason: describeCause(error) }));
    }
  }
  return more;
}

/** How often the rollout flow asks again while a wave waits: reports arrive within seconds. */
export const flowPollSeconds = 10;

/**
 * How long one Task goes on taking claiming steps (each bounded itself, service.ts `claimStep`)
 * before it answers and the flow comes back: far inside rollout-advance's 330 s.
 */
export const flowClaimMs = 60_000;

/**
 * The rollout flow's Task (lib/server/flows/rollout.asl.json): steps the rollout until it waits, and
 * says whether it is finished and how long to wait. Claiming (and letting go of claims) goes on
 * step after step for up to flowClaimMs. A step that failed (the store away, a wave's push
 * failed) is logged and asked again after a wait, never thrown: the flow's own retries are for
 * Lambda's faults, and the record makes every step safe to take again.
 */
export async function advanceForFlow(
  deps: { readonly rollouts: Rollouts; readonly log: Log; readonly now: () => Date },
  input: unknown,
): Promise<{ readonly id: string; readonly finished: boolean; readonly waitSeconds: number }> {
  const id = String((input as { id?: unknown } | null)?.id ?? '');
  const began = deps.now().getTime();
  let stepping = id;
  for (let steps = 0; steps < 3; ) {
    try {
      const { record, decision } = await deps.rollouts.step(stepping);
      if (!isDriven(record)) {
        const undo = stepping === id ? undoFollowed(record) : undefined;
        if (undo === undefined) return { id, finished: true, waitSeconds: 0 };
        stepping = undo;
        continue;
      }
      if (hasMore(decision)) {
        if (deps.now().getTime() - began < flowClaimMs) continue;
        return { id, finished: false, waitSeconds: 1 };
      }
      steps += 1;
      if (decision.kind === 'send') continue;
      const until = decision.kind === 'wait' ? Date.parse(decision.until) - deps.now().getTime() : 0;
      return {
        id,
        finished: false,
        waitSeconds: Math.max(1, Math.min(flowPollSeconds, Math.ceil(until / 1000))),
      };
    } catch (error) {
      if (error instanceof RolloutNotFoundError) return { id, finished: true, waitSeconds: 0 };
      if (!(error instanceof RolloutRaceError))
        logLine(
          deps.log,
          say(pushLines.rolloutStepFailed, { rollout: stepping, reason: describeCause(error) }),
        );
      return { id, finished: false, waitSeconds: flowPollSeconds };
    }
  }
  return { id, finished: false, waitSeconds: 1 };
}

/**
 * The undo an agent upgrade's `--auto-undo` asked for on its halt: recorded by the upgrade's own
 * step (service.ts, `undo`), where no queue message starts a flow for it as one does for a
 * module upgrade's, and the rollout flow cannot start itself. So the upgrade's flow goes on
 * stepping its undo, its input still naming the upgrade, until the undo is no longer driven.
 */
const undoFollowed = (record: RolloutRecord): string | undefined =>
  record.origin.kind === 'agent' && record.options.autoUndo === true ? record.undoneBy : undefined;
