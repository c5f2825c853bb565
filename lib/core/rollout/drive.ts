import { logLine, say } from '../coded-lines.ts';
import { pushLines } from '../mesh/lines.ts';
import type { Log } from '../ports.ts';
import { describeCause } from '../unavailable.ts';
import { RolloutNotFoundError, RolloutRaceError } from './errors.ts';
import type { RolloutStore } from './ports.ts';
import type { Rollouts } from './service.ts';

/**
 * One tick of a rollout driver: every running rollout (found by its record, so a driver that
 * starts again resumes them all) is stepped once. A step another driver won is left to it; a
 * step that failed is logged and taken again on the next tick, which the record makes safe.
 */
export async function driveRunning(
  deps: { readonly rollouts: Rollouts; readonly rolloutStore: RolloutStore; readonly log: Log },
  only?: readonly string[],
): Promise<void> {
  let ids: readonly string[];
  try {
    ids = only ?? (await deps.rolloutStore.running());
  } catch (error) {
    // the store away: the next tick asks again; a driver never stops for it
    logLine(
      deps.log,
      say(pushLines.rolloutStepFailed, { rollout: '(the running list)', reason: describeCause(error) }),
    );
    return;
  }
  for (const id of ids) {
    try {
      const { decision } = await deps.rollouts.step(id);
      if (decision.kind === 'wait' || decision.kind === 'idle') continue;
      const reason =
        decision.kind === 'send'
          ? `wave ${decision.wave + 1}: ${decision.nodes.length} nodes`
          : 'reason' in decision
            ? decision.reason
            : undefined;
      logLine(
        deps.log,
        say(pushLines.rolloutMoved, { rollout: id, decision: decision.kind, ...(reason ? { reason } : {}) }),
      );
    } catch (error) {
      if (error instanceof RolloutRaceError) continue;
      logLine(deps.log, say(pushLines.rolloutStepFailed, { rollout: id, reason: describeCause(error) }));
    }
  }
}

/** How often the rollout flow asks again while a wave waits: reports arrive within seconds. */
export const flowPollSeconds = 10;

/**
 * The rollout flow's Task (lib/flow/rollout.asl.json): steps the rollout until it waits, and
 * says whether it is finished and how long to wait. A step that failed (the store away, a wave's
 * push failed) is logged and asked again after a wait, never thrown: the flow's own retries are
 * for Lambda's faults, and the record makes every step safe to take again.
 */
export async function advanceForFlow(
  deps: { readonly rollouts: Rollouts; readonly log: Log; readonly now: () => Date },
  input: unknown,
): Promise<{ readonly id: string; readonly finished: boolean; readonly waitSeconds: number }> {
  const id = String((input as { id?: unknown } | null)?.id ?? '');
  for (let steps = 0; steps < 3; steps += 1) {
    try {
      const { record, decision } = await deps.rollouts.step(id);
      if (record.state !== 'running') return { id, finished: true, waitSeconds: 0 };
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
        logLine(deps.log, say(pushLines.rolloutStepFailed, { rollout: id, reason: describeCause(error) }));
      return { id, finished: false, waitSeconds: flowPollSeconds };
    }
  }
  return { id, finished: false, waitSeconds: 1 };
}
